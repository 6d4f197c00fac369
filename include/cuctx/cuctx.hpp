// SPDX-License-Identifier: MIT
#pragma once

/// \file
/// The umbrella header: everything cuctx offers.

/// \namespace cuctx
/// Everything cuctx offers. Each type states its threading contract under "Threading", in the words
/// docs/threading.md defines (thread-safe, thread-compatible, thread-bound, reentrant).

#include "cuctx/context.hpp"
#include "cuctx/context_binding.hpp"
#include "cuctx/context_guard.hpp"
#include "cuctx/context_options.hpp"
#include "cuctx/context_stack.hpp"
#include "cuctx/device.hpp"
#include "cuctx/device_buffer.hpp"
#include "cuctx/device_fault.hpp"
#include "cuctx/device_mode.hpp"
#include "cuctx/device_properties.hpp"
#include "cuctx/diagnosis.hpp"
#include "cuctx/driver.hpp"
#include "cuctx/error.hpp"
#include "cuctx/event.hpp"
#include "cuctx/function.hpp"
#include "cuctx/gpu_process.hpp"
#include "cuctx/gpu_worker.hpp"
#include "cuctx/image_kind.hpp"
#include "cuctx/ipc_handle.hpp"
#include "cuctx/jit_options.hpp"
#include "cuctx/launch.hpp"
#include "cuctx/launch_config.hpp"
#include "cuctx/launch_journal.hpp"
#include "cuctx/library.hpp"
#include "cuctx/live_objects.hpp"
#include "cuctx/log.hpp"
#include "cuctx/module.hpp"
#include "cuctx/module_image.hpp"
#include "cuctx/peer_access.hpp"
#include "cuctx/pipeline.hpp"
#include "cuctx/process_report.hpp"
#include "cuctx/rank_binding.hpp"
#include "cuctx/report_on_signal.hpp"
#include "cuctx/source_location.hpp"
#include "cuctx/spmd.hpp"
#include "cuctx/stream.hpp"
#include "cuctx/version.hpp"
#include "cuctx/worker_process.hpp"

#pragma once

// The umbrella header: everything cuctx offers.

#include "cuctx/context.hpp"
#include "cuctx/context_binding.hpp"
#include "cuctx/context_guard.hpp"
#include "cuctx/context_options.hpp"
#include "cuctx/context_stack.hpp"
#include "cuctx/device.hpp"
#include "cuctx/device_properties.hpp"
#include "cuctx/driver.hpp"
#include "cuctx/error.hpp"
#include "cuctx/function.hpp"
#include "cuctx/image_kind.hpp"
#include "cuctx/jit_options.hpp"
#include "cuctx/launch.hpp"
#include "cuctx/launch_config.hpp"
#include "cuctx/library.hpp"
#include "cuctx/log.hpp"
#include "cuctx/module.hpp"
#include "cuctx/version.hpp"

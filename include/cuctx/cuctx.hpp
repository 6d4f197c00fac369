#pragma once

// The umbrella header: everything cuctx offers.

#include "cuctx/device.hpp"
#include "cuctx/device_properties.hpp"
#include "cuctx/driver.hpp"
#include "cuctx/error.hpp"
#include "cuctx/log.hpp"
#include "cuctx/version.hpp"

// SPDX-License-Identifier: MIT
#pragma once

/// \file
/// cuctx::PeerAccess: which devices can reach each other's memory, and enabling that between
/// contexts.

#include "cuctx/context.hpp"
#include "cuctx/device.hpp"
#include "cuctx/export.hpp"

#include <vector>

namespace cuctx {

/// cuDeviceCanAccessPeer and cuDeviceGetP2PAttribute from one device to another. A value type.
struct PeerLink {
    int from = 0;                 ///< the ordinal of the device whose kernels access
    int to = 0;                   ///< the ordinal of the device whose memory they access
    bool canAccess = false;       ///< cuDeviceCanAccessPeer
    int performanceRank = 0;      ///< CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK (lower is faster)
    bool accessSupported = false; ///< CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED
    bool nativeAtomics = false;   ///< CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED
    bool arrayAccess = false;     ///< CU_DEVICE_P2P_ATTRIBUTE_CUDA_ARRAY_ACCESS_SUPPORTED
};

/// Which devices can reach each other's memory, and enabling that between contexts. Only static
/// functions.
///
/// \par Threading
/// Thread-safe (static functions over the driver); enable() and disable() change the `from`
/// context for every thread.
class CUCTX_API PeerAccess {
public:
    /// What the driver says of `from` reaching `to`'s memory.
    static PeerLink link(const Device& from, const Device& to);
    /// Every ordered pair of distinct devices.
    static std::vector<PeerLink> matrix();
    /// Lets kernels of `from` access memory of `to`. Idempotent: already enabled is success.
    /// Returns whether this call enabled it. An error when the devices cannot reach each other.
    static bool enable(const Context& from, const Context& to);
    /// The reverse; not enabled is success. Returns whether this call disabled it.
    static bool disable(const Context& from, const Context& to);
};

} // namespace cuctx

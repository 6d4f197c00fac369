// SPDX-License-Identifier: MIT
#include "cuctx/peer_access.hpp"

#include "cuctx/context_guard.hpp"

#include "check/check.hpp"
#include "context/context_access.hpp"
#include "driver/driver_state.hpp"

namespace cuctx {

PeerLink PeerAccess::link(const Device& from, const Device& to)
{
    const detail::DriverApi& d = detail::api();
    PeerLink l;
    l.from = from.ordinal();
    l.to = to.ordinal();
    int can = 0;
    detail::check(d.cuDeviceCanAccessPeer(&can, from.native(), to.native()), "cuDeviceCanAccessPeer",
                  detail::Subject{.device = l.from});
    l.canAccess = can != 0;
    auto attribute = [&](CUdevice_P2PAttribute a) {
        int v = 0;
        detail::check(d.cuDeviceGetP2PAttribute(&v, a, from.native(), to.native()), "cuDeviceGetP2PAttribute",
                      detail::Subject{.device = l.from});
        return v;
    };
    l.performanceRank = attribute(CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK);
    l.accessSupported = attribute(CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED) != 0;
    l.nativeAtomics = attribute(CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED) != 0;
    l.arrayAccess = attribute(CU_DEVICE_P2P_ATTRIBUTE_CUDA_ARRAY_ACCESS_SUPPORTED) != 0;
    return l;
}

std::vector<PeerLink> PeerAccess::matrix()
{
    std::vector<PeerLink> links;
    const std::vector<Device> devices = Device::all();
    for (const Device& a : devices)
        for (const Device& b : devices)
            if (a.ordinal() != b.ordinal())
                links.push_back(link(a, b));
    return links;
}

bool PeerAccess::enable(const Context& from, const Context& to)
{
    detail::ContextState& f = detail::checkedState(from, "cuctx::PeerAccess::enable");
    detail::ContextState& t = detail::checkedState(to, "cuctx::PeerAccess::enable");
    ContextGuard guard(from);
    const CUresult r = detail::api().cuCtxEnablePeerAccess(t.handle, 0);
    if (r == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED)
        return false;
    if (r != CUDA_SUCCESS)
        detail::throwDriverError(r, "cuCtxEnablePeerAccess", detail::subjectOf(f), SourceLocation::current(),
                                 "enabling access from " + detail::describeContext(f) + " to " +
                                     detail::describeContext(t),
                                 r == CUDA_ERROR_PEER_ACCESS_UNSUPPORTED
                                     ? "These devices cannot reach each other's memory (see cuctx-inspect topology); "
                                       "copy through the host or with cuMemcpyPeer instead"
                                     : "");
    return true;
}

bool PeerAccess::disable(const Context& from, const Context& to)
{
    detail::ContextState& f = detail::checkedState(from, "cuctx::PeerAccess::disable");
    detail::ContextState& t = detail::checkedState(to, "cuctx::PeerAccess::disable");
    ContextGuard guard(from);
    const CUresult r = detail::api().cuCtxDisablePeerAccess(t.handle);
    if (r == CUDA_ERROR_PEER_ACCESS_NOT_ENABLED)
        return false;
    detail::check(r, "cuCtxDisablePeerAccess", detail::subjectOf(f));
    return true;
}

} // namespace cuctx

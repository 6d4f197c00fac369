// A consumer of the public headers built with the flags backends use (-O2 -Wall -Werror, see
// test/meson.build): they must compile warning-free there. g++ 12 warned -Wmaybe-uninitialized from
// context_guard.hpp through std::optional<ContextGuard> (the functions below, as backends write
// them); run, it checks that the guards did what they say.

#include <cuctx/cuctx.hpp>

#include <cstdio>
#include <optional>

// External, as in a backend's own sources (the warning showed in such functions, not in inlined ones).
bool reseat(const cuctx::Context& a, const cuctx::Context& b);
bool maybe(const cuctx::Context& a, bool enter);

// Re-seats an optional guard: the pattern that warned.
bool reseat(const cuctx::Context& a, const cuctx::Context& b)
{
    std::optional<cuctx::ContextGuard> g(std::in_place, a);
    g.reset();
    g.emplace(b);
    return g->switched();
}

// A guard only where one is needed.
bool maybe(const cuctx::Context& a, bool enter)
{
    std::optional<cuctx::ContextGuard> g;
    if (enter)
        g.emplace(a);
    return (cuctx::ContextStack::current() == a.native()) == enter;
}

int main()
{
    cuctx::Driver::setLibraryPath(CUCTX_FAKE_DRIVER_PATH);
    const cuctx::Device dev = cuctx::Device::get(0);
    const cuctx::Context a = cuctx::Context::create(dev);
    const cuctx::Context b = cuctx::Context::create(dev);
    const bool ok = reseat(a, b) && cuctx::ContextStack::current() == nullptr && maybe(a, true) && maybe(a, false) &&
                    cuctx::ContextStack::depth() == 0;
    std::printf("%s\n", ok ? "ok" : "a guard in std::optional did not do what it says");
    return ok ? 0 : 1;
}

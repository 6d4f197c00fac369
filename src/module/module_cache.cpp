// SPDX-License-Identifier: MIT
#include "module/module_cache.hpp"

#include "context/context_access.hpp"
#include "module/image_digest.hpp"
#include "module/jit_marshal.hpp"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

namespace cuctx::detail {

struct ModuleCacheTable {
    struct Key {
        ImageDigest digest;
        std::string options;
        auto operator<=>(const Key&) const = default;
    };
    struct Entry {
        std::vector<std::byte> image; // the bytes it is for: a digest match alone proves nothing
        std::mutex mutex;
        std::condition_variable loaded;
        bool loading = false;
        std::shared_ptr<ModuleState> module;
    };
    // Images whose digests collide share a key: each has its own entry there.
    using Entries = std::map<Key, std::vector<std::shared_ptr<Entry>>>;
    std::mutex mutex;
    Entries entries;
};

namespace {

ModuleCacheTable& tableOf(ContextState& context)
{
    ModuleCacheTable* table = context.moduleCache.load(std::memory_order_acquire);
    if (table != nullptr)
        return *table;
    auto fresh = std::make_unique<ModuleCacheTable>();
    if (context.moduleCache.compare_exchange_strong(table, fresh.get(), std::memory_order_acq_rel))
        return *fresh.release();
    return *table; // another thread made it first
}

} // namespace

std::span<const std::byte> cacheBytes(std::span<const std::byte> image) noexcept
{
    // The driver reads PTX as a C string: what follows its first NUL (if any) is not part of it.
    if (detectImageKind(image) == ImageKind::ptx)
        if (const void* nul = std::memchr(image.data(), 0, image.size()); nul != nullptr)
            return image.first(static_cast<std::size_t>(static_cast<const std::byte*>(nul) - image.data()));
    return image;
}

std::shared_ptr<ModuleState> cachedModule(const Context& context, std::span<const std::byte> image,
                                          const JitOptions& options, const std::string& label)
{
    ContextState& cs = checkedState(context, "cuctx::Module::cached");
    ModuleCacheTable& table = tableOf(cs);
    image = cacheBytes(image);
    ModuleCacheTable::Key key{digestImage(image), jitFingerprint(options)};
    std::shared_ptr<ModuleCacheTable::Entry> entry;
    {
        std::lock_guard lock(table.mutex);
        auto& bucket = table.entries[std::move(key)];
        for (const auto& candidate : bucket)
            if (std::ranges::equal(candidate->image, image)) {
                entry = candidate;
                break;
            }
        if (entry == nullptr) {
            entry = std::make_shared<ModuleCacheTable::Entry>();
            entry->image.assign(image.begin(), image.end());
            bucket.push_back(entry);
        }
    }
    std::unique_lock lock(entry->mutex);
    while (true) {
        entry->loaded.wait(lock, [&] { return !entry->loading; });
        if (entry->module != nullptr) {
            std::shared_ptr<ModuleState> hit = entry->module;
            lock.unlock();
            if (options.loadAllKernels)
                ModuleState::handle(context, hit).loadAllKernels();
            return hit;
        }
        entry->loading = true; // this thread loads; the others wait
        lock.unlock();
        try {
            std::shared_ptr<ModuleState> module = loadCheckedImage(context, image, options, label);
            lock.lock();
            entry->module = module;
            entry->loading = false;
            entry->loaded.notify_all();
            return module;
        } catch (...) {
            lock.lock();
            entry->loading = false;
            entry->loaded.notify_all();
            throw;
        }
    }
}

std::size_t moduleCacheSize(ContextState& context) noexcept
{
    ModuleCacheTable* table = context.moduleCache.load(std::memory_order_acquire);
    if (table == nullptr)
        return 0;
    std::size_t n = 0;
    std::lock_guard lock(table->mutex);
    for (auto& [key, bucket] : table->entries)
        for (auto& entry : bucket) {
            std::lock_guard entryLock(entry->mutex);
            n += entry->module != nullptr ? 1 : 0;
        }
    return n;
}

void clearModuleCache(ContextState& context) noexcept
{
    ModuleCacheTable* table = context.moduleCache.load(std::memory_order_acquire);
    if (table == nullptr)
        return;
    ModuleCacheTable::Entries dropped;
    {
        std::lock_guard lock(table->mutex);
        dropped.swap(table->entries);
    }
    // Unloads (outside the lock) what nobody else holds; a load in progress keeps its entry alive
    // and finishes into it, but the table no longer finds it.
}

void destroyModuleCache(ContextState& context) noexcept
{
    ModuleCacheTable* table = context.moduleCache.exchange(nullptr, std::memory_order_acq_rel);
    delete table; // the context is unused by now: no load can be in progress
}

} // namespace cuctx::detail

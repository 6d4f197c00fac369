// SPDX-License-Identifier: MIT
#include "module/module_cache.hpp"

#include "context/context_access.hpp"
#include "module/image_digest.hpp"
#include "module/jit_marshal.hpp"
#include "module/module_image_data.hpp"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

namespace cuctx::detail {

struct ModuleCacheTable {
    struct Key {
        ImageDigest digest;
        std::string options;
        // NOLINTNEXTLINE(modernize-use-nullptr): clang-tidy 14 sees the 0 that <=> compares with
        auto operator<=>(const Key&) const = default;
    };

    // A module handed out by reference (Module::cached of a ModuleImage). The reference stays valid
    // as long as the context lives, so it is kept until the table goes; and its Context counts no
    // owner (the context owns the table: a counted handle here would keep the context alive for ever).
    struct Pinned {
        Module module;
        Pinned(ContextState& context, std::shared_ptr<ModuleState> state) noexcept
            : module(ModuleState::uncountedHandle(context, std::move(state)))
        {
        }
        Pinned(const Pinned&) = delete;
        Pinned& operator=(const Pinned&) = delete;
        ~Pinned() { ModuleState::releaseUncounted(module); }
    };

    struct Entry {
        std::span<const std::byte> image;       // the bytes it is for: a digest match alone proves nothing
        std::shared_ptr<const void> imageOwner; // what keeps them: the cache's copy, or a ModuleImage's record
        std::mutex mutex;
        std::condition_variable loaded;
        bool loading = false;
        std::shared_ptr<ModuleState> module;
        // Under the table's mutex:
        bool retired = false;           // clearCache took it out of the table
        std::unique_ptr<Pinned> pinned; // set once, at its first hand-out by reference
    };
    // Images whose digests collide share a key: each has its own entry there.
    using Entries = std::map<Key, std::vector<std::shared_ptr<Entry>>>;

    // ModuleImage ids to their pinned modules: what a hit reads, with no lock and no write. Open
    // addressing over atomic pointers to links that never change and live as long as the table; at
    // most half full, so every probe ends at an empty slot. Written under the table's mutex only.
    struct IdLink {
        std::uint64_t id;
        const Module* module;
    };
    struct IdIndex {
        explicit IdIndex(std::size_t capacity) : mask(capacity - 1), slots(new std::atomic<const IdLink*>[capacity]())
        {
        }
        std::size_t mask;
        std::unique_ptr<std::atomic<const IdLink*>[]> slots;
        std::size_t used = 0; // under the table's mutex
    };

    // Read by every hit: kept off the line of the mutex that loads take.
    alignas(64) std::atomic<IdIndex*> index{nullptr};
    alignas(64) std::mutex mutex;
    Entries entries;
    std::vector<std::unique_ptr<IdIndex>> indexes; // the current one and those it replaced (a hit may be in one)
    std::deque<IdLink> links;                      // (a deque never moves its elements)
    std::vector<std::shared_ptr<Entry>> pinned;    // kept to the end: their modules were handed out by reference
};

namespace {

using Table = ModuleCacheTable;

ModuleCacheTable& tableOf(ContextState& context)
{
    ModuleCacheTable* table = context.moduleCache.load(std::memory_order_acquire);
    if (table != nullptr)
        return *table;
    // The context's destruction must unload what its cache holds: it calls back here.
    setContextDestroyHook(&destroyModuleCache);
    auto fresh = std::make_unique<ModuleCacheTable>();
    if (context.moduleCache.compare_exchange_strong(table, fresh.get(), std::memory_order_acq_rel))
        return *fresh.release();
    return *table; // another thread made it first
}

std::size_t slotOf(std::uint64_t id, std::size_t mask) noexcept
{
    return static_cast<std::size_t>((id * 0x9E3779B97F4A7C15ull) >> 32) & mask;
}

const Module* findById(const Table::IdIndex* index, std::uint64_t id) noexcept
{
    if (index == nullptr)
        return nullptr;
    for (std::size_t i = slotOf(id, index->mask);; i = (i + 1) & index->mask) {
        const Table::IdLink* link = index->slots[i].load(std::memory_order_acquire);
        if (link == nullptr)
            return nullptr;
        if (link->id == id)
            return link->module;
    }
}

void place(Table::IdIndex& index, const Table::IdLink* link) noexcept
{
    std::size_t i = slotOf(link->id, index.mask);
    while (index.slots[i].load(std::memory_order_relaxed) != nullptr)
        i = (i + 1) & index.mask;
    index.slots[i].store(link, std::memory_order_release);
    ++index.used;
}

// Under the table's mutex.
void indexId(Table& table, std::uint64_t id, const Module& module)
{
    Table::IdIndex* index = table.index.load(std::memory_order_relaxed);
    const std::size_t capacity = index != nullptr ? index->mask + 1 : 0;
    if (index == nullptr || (index->used + 1) * 2 > capacity) {
        // A larger copy, published whole; hits still in the old one find what it had.
        auto grown = std::make_unique<Table::IdIndex>(std::max<std::size_t>(16, capacity * 2));
        if (index != nullptr)
            for (std::size_t i = 0; i < capacity; ++i)
                if (const Table::IdLink* link = index->slots[i].load(std::memory_order_relaxed))
                    place(*grown, link);
        table.indexes.reserve(table.indexes.size() + 1);
        index = grown.get();
        table.indexes.push_back(std::move(grown));
        table.index.store(index, std::memory_order_release);
    }
    const Table::IdLink& link = table.links.emplace_back(Table::IdLink{id, &module});
    place(*index, &link);
}

// The entry for `image` under `key`, made if there is none. `owner` keeps the bytes alive; without
// one, the entry keeps a copy.
std::shared_ptr<Table::Entry> entryFor(Table& table, Table::Key key, std::span<const std::byte> image,
                                       std::shared_ptr<const void> owner)
{
    std::lock_guard lock(table.mutex);
    auto& bucket = table.entries[std::move(key)];
    for (const auto& candidate : bucket)
        if (std::ranges::equal(candidate->image, image))
            return candidate;
    auto entry = std::make_shared<Table::Entry>();
    if (owner == nullptr) {
        auto copy = std::make_shared<const std::vector<std::byte>>(image.begin(), image.end());
        image = *copy;
        owner = std::move(copy);
    }
    entry->image = image;
    entry->imageOwner = std::move(owner);
    bucket.push_back(entry);
    return entry;
}

// The entry's module, loaded with `load` if no thread has it yet. Concurrent first requests load
// once: the others wait for that load and share its module; if it fails, each waiter tries again
// itself (and gets its own error).
template <typename Load>
std::shared_ptr<ModuleState> moduleOf(const Context& context, Table::Entry& entry, const JitOptions& options, Load load)
{
    std::unique_lock lock(entry.mutex);
    while (true) {
        entry.loaded.wait(lock, [&] { return !entry.loading; });
        if (entry.module != nullptr) {
            std::shared_ptr<ModuleState> hit = entry.module;
            lock.unlock();
            if (options.loadAllKernels)
                ModuleState::handle(context, hit).loadAllKernels();
            return hit;
        }
        entry.loading = true; // this thread loads; the others wait
        lock.unlock();
        try {
            std::shared_ptr<ModuleState> module = load();
            lock.lock();
            entry.module = module;
            entry.loading = false;
            entry.loaded.notify_all();
            return module;
        } catch (...) {
            lock.lock();
            entry.loading = false;
            entry.loaded.notify_all();
            throw;
        }
    }
}

// An image's first request in this context (or its first since clearCache): by digest and bytes,
// as cachedModule of a span does, then its id indexed so that later hits never read the bytes.
[[gnu::noinline]] const Module& firstRequest(const Context& context, ContextState& cs, Table& table,
                                             const std::shared_ptr<const ModuleImageData>& image)
{
    const std::shared_ptr<Table::Entry> entry =
        entryFor(table, Table::Key{image->digest, image->fingerprint}, image->bytes(), image);
    const std::shared_ptr<ModuleState> module = moduleOf(context, *entry, image->options, [&] {
        return loadModule(context, image->loadBytes(), image->kind, image->options, image->label);
    });
    std::lock_guard lock(table.mutex);
    if (const Module* hit = findById(table.index.load(std::memory_order_relaxed), image->id))
        return *hit; // another thread got here first
    if (entry->pinned == nullptr) {
        table.pinned.reserve(table.pinned.size() + 1);
        entry->pinned = std::make_unique<Table::Pinned>(cs, module);
        table.pinned.push_back(entry);
    }
    // An entry that clearCache retired meanwhile still answers this request, but no later one.
    if (!entry->retired)
        indexId(table, image->id, entry->pinned->module);
    return entry->pinned->module;
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
    Table& table = tableOf(cs);
    image = cacheBytes(image);
    const std::shared_ptr<Table::Entry> entry =
        entryFor(table, Table::Key{digestImage(image), jitFingerprint(options)}, image, nullptr);
    return moduleOf(context, *entry, options, [&] { return loadCheckedImage(context, image, options, label); });
}

const Module& cachedModule(const Context& context, const ModuleImage& image)
{
    ContextState& cs = checkedState(context, "cuctx::Module::cached");
    const std::shared_ptr<const ModuleImageData>& data = ModuleImageData::of(image);
    if (data == nullptr) [[unlikely]]
        throwError(Errc::invalid_argument, "cuctx::Module::cached", "the ModuleImage is empty",
                   "Make one with ModuleImage::fromFile, fromBytes or fromPtx", subjectOf(cs));
    Table& table = tableOf(cs);
    if (const Module* hit = findById(table.index.load(std::memory_order_acquire), data->id)) [[likely]]
        return *hit;
    return firstRequest(context, cs, table, data);
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
        for (auto& [key, bucket] : dropped)
            for (auto& entry : bucket)
                entry->retired = true;
        // Emptied in place: a hit racing with this finds its module or goes to firstRequest, which
        // loads anew. The links and pinned modules stay: references handed out stay valid.
        if (ModuleCacheTable::IdIndex* index = table->index.load(std::memory_order_relaxed)) {
            for (std::size_t i = 0; i <= index->mask; ++i)
                index->slots[i].store(nullptr, std::memory_order_relaxed);
            index->used = 0;
        }
    }
    // Unloads (outside the lock) what nobody else holds; a load in progress keeps its entry alive
    // and finishes into it, but the table no longer finds it. Pinned entries stay in table->pinned.
}

void destroyModuleCache(ContextState& context) noexcept
{
    ModuleCacheTable* table = context.moduleCache.exchange(nullptr, std::memory_order_acq_rel);
    delete table; // the context is unused by now: no load can be in progress
}

} // namespace cuctx::detail

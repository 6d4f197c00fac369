// SPDX-License-Identifier: MIT
#include "cuctx/module_image.hpp"

#include "check/check.hpp"
#include "module/jit_marshal.hpp"
#include "module/module_cache.hpp"
#include "module/module_image_data.hpp"
#include "module/module_state.hpp"

#include <atomic>

namespace cuctx {

namespace {

std::atomic<std::uint64_t> g_nextImageId{1};

} // namespace

ModuleImage::ModuleImage(std::shared_ptr<const detail::ModuleImageData> data) noexcept : data_(std::move(data)) {}

ModuleImage ModuleImage::fromBytes(std::span<const std::byte> image, const JitOptions& options, std::string_view label)
{
    const ImageKind kind = detectImageKind(image);
    if (const std::string problem = checkImageBounds(image, kind); !problem.empty()) {
        const std::string name(label);
        detail::throwError(Errc::invalid_argument, "cuctx::ModuleImage",
                           "cannot use '" + name + "' as a module image: " + problem,
                           "Pass a complete PTX, cubin or fatbin image", detail::Subject{.name = name.c_str()});
    }
    auto data = std::make_shared<detail::ModuleImageData>();
    data->kind = kind;
    const std::span<const std::byte> bytes = detail::cacheBytes(image);
    data->size = bytes.size();
    data->storage.reserve(bytes.size() + 1);
    data->storage.assign(bytes.begin(), bytes.end());
    if (kind == ImageKind::ptx)
        data->storage.push_back(std::byte{0});
    data->digest = detail::digestImage(bytes);
    data->fingerprint = detail::jitFingerprint(options);
    data->options = options;
    data->label = label;
    data->id = g_nextImageId.fetch_add(1, std::memory_order_relaxed);
    return ModuleImage(std::move(data));
}

ModuleImage ModuleImage::fromPtx(std::string_view ptx, const JitOptions& options, std::string_view label)
{
    return fromBytes(std::as_bytes(std::span(ptx.data(), ptx.size())), options, label);
}

ModuleImage ModuleImage::fromFile(const std::filesystem::path& path, const JitOptions& options)
{
    const std::vector<std::byte> image = detail::readImageFile(path, "cuctx::ModuleImage::fromFile");
    return fromBytes(image, options, path.string());
}

const detail::ModuleImageData& ModuleImage::data(const char* call) const
{
    if (data_ == nullptr)
        detail::throwError(Errc::invalid_argument, call, "the ModuleImage is empty (default-constructed or moved from)",
                           "Make one with ModuleImage::fromFile, fromBytes or fromPtx");
    return *data_;
}

std::uint64_t ModuleImage::id() const noexcept
{
    return data_ != nullptr ? data_->id : 0;
}

std::span<const std::byte> ModuleImage::bytes() const
{
    return data("cuctx::ModuleImage::bytes").bytes();
}

ImageKind ModuleImage::kind() const
{
    return data("cuctx::ModuleImage::kind").kind;
}

const JitOptions& ModuleImage::options() const
{
    return data("cuctx::ModuleImage::options").options;
}

const std::string& ModuleImage::label() const
{
    return data("cuctx::ModuleImage::label").label;
}

} // namespace cuctx

// SPDX-License-Identifier: MIT
// The fake driver's modules, kernels, launches and memory. It "compiles" PTX by reading its
// .entry, .param and .global declarations, so that cuctx's option marshalling, image handling,
// lookups, parameter checks and cache can run on the CPU. Malformed PTX (the word "bogus") fails
// as the real JIT does, with its message in the error log.

#include "fake_driver.hpp"
#include "fake_internal.hpp"

#include <cuda.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

using namespace fake;

namespace {

struct FakeModule;

struct FakeFunction {
    FakeModule* module;
    std::string name;
    std::vector<std::pair<std::size_t, std::size_t>> params; // offset, bytes
    int maxDynamicShared = 0;
};

struct FakeModule {
    FakeContext* context;
    std::vector<std::unique_ptr<FakeFunction>> functions;
    std::map<std::string, std::size_t> globals;
    std::vector<std::unique_ptr<std::vector<unsigned char>>> globalStorage;
    bool unloaded = false;
};

struct Modules {
    std::mutex mutex;
    std::set<FakeModule*> live;
    std::vector<std::unique_ptr<FakeModule>> all;     // never freed: stale handles stay readable
    std::map<int, unsigned long long> lastJitOptions; // option -> value as passed in
    std::set<void*> allocations;
};

Modules& modules()
{
    static auto* m = new Modules;
    return *m;
}

// The number that starts `text` at `from` (`u64` in `.u64`, `16` in `name[16]`); 0 where none does.
std::size_t leadingNumber(const std::string& text, std::size_t from)
{
    std::size_t value = 0;
    if (from >= text.size() || std::from_chars(text.data() + from, text.data() + text.size(), value).ec != std::errc{})
        return 0;
    return value;
}

std::size_t ptxTypeBytes(const std::string& type)
{
    if (type.size() < 3)
        return 0;
    const std::size_t bits = leadingNumber(type, 2);
    return bits >= 8 ? bits / 8 : 0;
}

// `.param .u64 name` or `.param .align 8 .b8 name[16]`: the parameter's size.
std::size_t paramBytes(const std::string& declaration)
{
    std::istringstream in(declaration);
    std::string word, type;
    std::size_t bytes = 0;
    while (in >> word) {
        if (word == ".param" || word == ".align" || std::isdigit(static_cast<unsigned char>(word[0])))
            continue;
        if (word[0] == '.') {
            type = word;
            bytes = ptxTypeBytes(type);
            continue;
        }
        if (const auto open = word.find('['); open != std::string::npos)
            bytes *= leadingNumber(word, open + 1);
        break;
    }
    return bytes;
}

void parsePtx(const std::string& text, FakeModule& module)
{
    std::size_t at = 0;
    while ((at = text.find(".entry", at)) != std::string::npos) {
        at += 6;
        std::size_t nameStart = text.find_first_not_of(" \t\r\n", at);
        std::size_t nameEnd = text.find_first_of(" \t\r\n(", nameStart);
        auto fn = std::make_unique<FakeFunction>();
        fn->module = &module;
        fn->name = text.substr(nameStart, nameEnd - nameStart);
        const std::size_t open = text.find('(', nameEnd);
        const std::size_t brace = text.find('{', nameEnd);
        if (open != std::string::npos && open < brace) {
            const std::size_t close = text.find(')', open);
            std::string list = text.substr(open + 1, close - open - 1);
            std::size_t offset = 0, start = 0;
            while (start < list.size()) {
                std::size_t comma = list.find(',', start);
                if (comma == std::string::npos)
                    comma = list.size();
                const std::size_t bytes = paramBytes(list.substr(start, comma - start));
                if (bytes != 0) {
                    const std::size_t align = std::min<std::size_t>(bytes, 8);
                    offset = (offset + align - 1) / align * align;
                    fn->params.emplace_back(offset, bytes);
                    offset += bytes;
                }
                start = comma + 1;
            }
        }
        module.functions.push_back(std::move(fn));
    }
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line)) {
        std::istringstream words(line);
        std::string word;
        bool global = false;
        std::size_t bytes = 0;
        while (words >> word) {
            if (word == ".visible" || word == ".extern")
                continue;
            if (!global) {
                if (word != ".global" && word != ".const")
                    break;
                global = true;
                continue;
            }
            if (word == ".align") {
                words >> word;
                continue;
            }
            if (word[0] == '.') {
                bytes = ptxTypeBytes(word);
                continue;
            }
            std::string name = word.substr(0, word.find_first_of("[;= "));
            if (const auto open = word.find('['); open != std::string::npos)
                bytes *= leadingNumber(word, open + 1);
            module.globals[name] = bytes;
            break;
        }
    }
}

void writeLog(void* buffer, void*& sizeSlot, const std::string& text)
{
    const auto capacity = reinterpret_cast<std::uintptr_t>(sizeSlot);
    if (buffer == nullptr || capacity == 0) {
        sizeSlot = nullptr;
        return;
    }
    const std::size_t n = std::min<std::size_t>(text.size(), capacity - 1);
    std::memcpy(buffer, text.data(), n);
    static_cast<char*>(buffer)[n] = '\0';
    sizeSlot = reinterpret_cast<void*>(static_cast<std::uintptr_t>(n + 1)); // in/out: the bytes used
}

CUresult loadImage(CUmodule* out, const void* image, unsigned count, CUjit_option* options, void** values)
{
    FakeContext* c = nullptr;
    if (CUresult r = currentForWork(&c); r != CUDA_SUCCESS)
        return r;
    if (out == nullptr || image == nullptr)
        return CUDA_ERROR_INVALID_VALUE;
    void* infoBuffer = nullptr;
    void* errorBuffer = nullptr;
    int infoSize = -1, errorSize = -1;
    {
        Modules& m = modules();
        std::lock_guard lock(m.mutex);
        m.lastJitOptions.clear();
        for (unsigned i = 0; i < count; ++i) {
            m.lastJitOptions[options[i]] = reinterpret_cast<std::uintptr_t>(values[i]);
            switch (options[i]) {
            case CU_JIT_INFO_LOG_BUFFER: infoBuffer = values[i]; break;
            case CU_JIT_ERROR_LOG_BUFFER: errorBuffer = values[i]; break;
            case CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES: infoSize = static_cast<int>(i); break;
            case CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES: errorSize = static_cast<int>(i); break;
            default: break;
            }
        }
    }
    static void* noSlot;
    void*& infoSlot = infoSize >= 0 ? values[infoSize] : noSlot;
    void*& errorSlot = errorSize >= 0 ? values[errorSize] : noSlot;
    auto module = std::make_unique<FakeModule>();
    module->context = c;
    const auto* bytes = static_cast<const unsigned char*>(image);
    const bool cubin = bytes[0] == 0x7f && bytes[1] == 'E' && bytes[2] == 'L' && bytes[3] == 'F';
    const bool fatbin = std::memcmp(bytes, "\x50\xed\x55\xba", 4) == 0;
    if (cubin || fatbin) {
        writeLog(infoBuffer, infoSlot, "");
    } else {
        const std::string text(static_cast<const char*>(image));
        if (text.find(".version") == std::string::npos) {
            writeLog(errorBuffer, errorSlot, "fake JIT: not an image");
            return CUDA_ERROR_INVALID_IMAGE;
        }
        if (const auto bad = text.find("bogus"); bad != std::string::npos) {
            const auto line = std::count(text.begin(), text.begin() + static_cast<long>(bad), '\n') + 1;
            writeLog(errorBuffer, errorSlot,
                     "ptxas application ptx input, line " + std::to_string(line) +
                         "; error   : Not a name of any known instruction: 'bogus'\nptxas fatal   : Ptx assembly "
                         "aborted due to errors");
            writeLog(infoBuffer, infoSlot, "");
            return CUDA_ERROR_INVALID_PTX;
        }
        parsePtx(text, *module);
        writeLog(infoBuffer, infoSlot, "fake JIT: compiled " + std::to_string(module->functions.size()) + " kernels");
        writeLog(errorBuffer, errorSlot, "");
    }
    Modules& m = modules();
    std::lock_guard lock(m.mutex);
    for (const auto& [name, size] : module->globals)
        module->globalStorage.push_back(std::make_unique<std::vector<unsigned char>>(std::max<std::size_t>(size, 1)));
    m.live.insert(module.get());
    *out = reinterpret_cast<CUmodule>(module.get());
    m.all.push_back(std::move(module));
    return CUDA_SUCCESS;
}

FakeModule* liveModule(CUmodule handle)
{
    auto* module = reinterpret_cast<FakeModule*>(handle);
    Modules& m = modules();
    std::lock_guard lock(m.mutex);
    return m.live.count(module) != 0 ? module : nullptr;
}

CUresult CUDAAPI fakeModuleLoadDataEx(CUmodule* out, const void* image, unsigned count, CUjit_option* options,
                                      void** values)
{
    FAKE_ENTER("cuModuleLoadDataEx");
    return loadImage(out, image, count, options, values);
}

CUresult CUDAAPI fakeModuleLoad(CUmodule* out, const char* path)
{
    FAKE_ENTER("cuModuleLoad");
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return CUDA_ERROR_FILE_NOT_FOUND;
    std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    data.push_back('\0');
    return loadImage(out, data.data(), 0, nullptr, nullptr);
}

CUresult CUDAAPI fakeModuleUnload(CUmodule handle)
{
    FAKE_ENTER("cuModuleUnload");
    auto* module = reinterpret_cast<FakeModule*>(handle);
    Modules& m = modules();
    std::lock_guard lock(m.mutex);
    if (m.live.erase(module) == 0)
        return CUDA_ERROR_INVALID_HANDLE;
    module->unloaded = true;
    // The driver frees a context's modules with it: unloading one afterwards is too late.
    if (module->context->destroyed.load())
        return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeModuleGetFunction(CUfunction* out, CUmodule handle, const char* name)
{
    FAKE_ENTER("cuModuleGetFunction");
    FakeModule* module = liveModule(handle);
    if (module == nullptr || out == nullptr || name == nullptr)
        return CUDA_ERROR_INVALID_HANDLE;
    for (const auto& fn : module->functions)
        if (fn->name == name) {
            *out = reinterpret_cast<CUfunction>(fn.get());
            return CUDA_SUCCESS;
        }
    return CUDA_ERROR_NOT_FOUND;
}

CUresult CUDAAPI fakeModuleGetGlobal(CUdeviceptr* address, size_t* bytes, CUmodule handle, const char* name)
{
    FAKE_ENTER("cuModuleGetGlobal");
    FakeModule* module = liveModule(handle);
    if (module == nullptr || name == nullptr)
        return CUDA_ERROR_INVALID_HANDLE;
    std::size_t index = 0;
    for (const auto& [global, size] : module->globals) {
        if (global == name) {
            if (address != nullptr)
                *address = reinterpret_cast<CUdeviceptr>(module->globalStorage[index]->data());
            if (bytes != nullptr)
                *bytes = size;
            return CUDA_SUCCESS;
        }
        ++index;
    }
    return CUDA_ERROR_NOT_FOUND;
}

CUresult CUDAAPI fakeModuleGetFunctionCount(unsigned* count, CUmodule handle)
{
    FAKE_ENTER("cuModuleGetFunctionCount");
    FakeModule* module = liveModule(handle);
    if (module == nullptr || count == nullptr)
        return CUDA_ERROR_INVALID_HANDLE;
    *count = static_cast<unsigned>(module->functions.size());
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeModuleEnumerateFunctions(CUfunction* functions, unsigned count, CUmodule handle)
{
    FAKE_ENTER("cuModuleEnumerateFunctions");
    FakeModule* module = liveModule(handle);
    if (module == nullptr || functions == nullptr)
        return CUDA_ERROR_INVALID_HANDLE;
    for (unsigned i = 0; i < count && i < module->functions.size(); ++i)
        functions[i] = reinterpret_cast<CUfunction>(module->functions[i].get());
    return CUDA_SUCCESS;
}

FakeFunction* function(CUfunction f)
{
    auto* fn = reinterpret_cast<FakeFunction*>(f);
    return fn != nullptr && !fn->module->unloaded ? fn : nullptr;
}

CUresult CUDAAPI fakeFuncGetAttribute(int* value, CUfunction_attribute attribute, CUfunction f)
{
    FAKE_ENTER("cuFuncGetAttribute");
    FakeFunction* fn = function(f);
    if (fn == nullptr || value == nullptr)
        return CUDA_ERROR_INVALID_HANDLE;
    switch (attribute) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *value = 1024; break;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES:
    case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES:
    case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: *value = 0; break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS: *value = 16; break;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION: *value = 80; break;
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *value = 90; break;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *value = fn->maxDynamicShared; break;
    default: *value = 0; break;
    }
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeFuncSetAttribute(CUfunction f, CUfunction_attribute attribute, int value)
{
    FAKE_ENTER("cuFuncSetAttribute");
    FakeFunction* fn = function(f);
    if (fn == nullptr)
        return CUDA_ERROR_INVALID_HANDLE;
    if (attribute == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) {
        if (value < 0 || value > 227 * 1024)
            return CUDA_ERROR_INVALID_VALUE;
        fn->maxDynamicShared = value;
    }
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeFuncSetCacheConfig(CUfunction f, CUfunc_cache)
{
    FAKE_ENTER("cuFuncSetCacheConfig");
    return function(f) != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult CUDAAPI fakeFuncGetName(const char** name, CUfunction f)
{
    FAKE_ENTER("cuFuncGetName");
    FakeFunction* fn = function(f);
    if (fn == nullptr || name == nullptr)
        return CUDA_ERROR_INVALID_HANDLE;
    *name = fn->name.c_str();
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeFuncGetParamInfo(CUfunction f, size_t index, size_t* offset, size_t* bytes)
{
    FAKE_ENTER("cuFuncGetParamInfo");
    FakeFunction* fn = function(f);
    if (fn == nullptr)
        return CUDA_ERROR_INVALID_HANDLE;
    if (index >= fn->params.size())
        return CUDA_ERROR_INVALID_VALUE;
    *offset = fn->params[index].first;
    *bytes = fn->params[index].second;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeFuncLoad(CUfunction f)
{
    FAKE_ENTER("cuFuncLoad");
    return function(f) != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult checkLaunch(CUfunction f, unsigned bx, unsigned by, unsigned bz, CUstream stream)
{
    FakeContext* c = nullptr;
    if (CUresult r = currentForWork(&c); r != CUDA_SUCCESS)
        return r;
    FakeFunction* fn = function(f);
    if (fn == nullptr)
        return CUDA_ERROR_INVALID_HANDLE;
    if (fn->module->context != c && stream == nullptr)
        return CUDA_ERROR_INVALID_HANDLE; // a kernel of another context
    if (static_cast<unsigned long long>(bx) * by * bz > 1024 || bx == 0 || by == 0 || bz == 0)
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

// Kernels of these names stand for kernels that go wrong on a real device (fake_driver.hpp): one
// that stores to address 0 ends in CUDA_ERROR_ILLEGAL_ADDRESS; one that never ends blocks its
// caller for good (the process is killed; only GpuWorker's worker processes launch it).
CUresult misbehave(CUfunction f)
{
    FakeFunction* fn = function(f);
    if (fn == nullptr)
        return CUDA_SUCCESS;
    if (fn->name == "cuctx_fake_illegal_address")
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    if (fn->name == "cuctx_fake_never_ends")
        for (;;)
            ::pause();
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeLaunchKernel(CUfunction f, unsigned, unsigned, unsigned, unsigned bx, unsigned by, unsigned bz,
                                  unsigned, CUstream stream, void**, void**)
{
    FAKE_ENTER("cuLaunchKernel");
    if (CUresult r = checkLaunch(f, bx, by, bz, stream); r != CUDA_SUCCESS)
        return r;
    return misbehave(f);
}

CUresult CUDAAPI fakeLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void**, void**)
{
    FAKE_ENTER("cuLaunchKernelEx");
    if (config == nullptr)
        return CUDA_ERROR_INVALID_VALUE;
    if (CUresult r = checkLaunch(f, config->blockDimX, config->blockDimY, config->blockDimZ, config->hStream);
        r != CUDA_SUCCESS)
        return r;
    return misbehave(f);
}

CUresult CUDAAPI fakeOccupancyMaxActiveBlocks(int* blocks, CUfunction f, int blockSize, size_t)
{
    FAKE_ENTER("cuOccupancyMaxActiveBlocksPerMultiprocessor");
    if (function(f) == nullptr || blocks == nullptr || blockSize <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    *blocks = std::min(32, 2048 / blockSize);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeOccupancyMaxPotentialBlockSize(int* minGrid, int* blockSize, CUfunction f, CUoccupancyB2DSize,
                                                    size_t, int limit)
{
    FAKE_ENTER("cuOccupancyMaxPotentialBlockSize");
    if (function(f) == nullptr || minGrid == nullptr || blockSize == nullptr)
        return CUDA_ERROR_INVALID_VALUE;
    *blockSize = limit > 0 ? std::min(limit, 1024) : 1024;
    *minGrid = 132 * (2048 / *blockSize);
    return CUDA_SUCCESS;
}

// Device memory is host memory here: enough for copies and for cuctx's tests of its buffers.
CUresult CUDAAPI fakeMemAlloc(CUdeviceptr* out, size_t bytes)
{
    FAKE_ENTER("cuMemAlloc");
    FakeContext* c = nullptr;
    if (CUresult r = currentForWork(&c); r != CUDA_SUCCESS)
        return r;
    if (out == nullptr || bytes == 0)
        return CUDA_ERROR_INVALID_VALUE;
    void* p = std::malloc(bytes);
    if (p == nullptr)
        return CUDA_ERROR_OUT_OF_MEMORY;
    Modules& m = modules();
    std::lock_guard lock(m.mutex);
    m.allocations.insert(p);
    *out = reinterpret_cast<CUdeviceptr>(p);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeMemFree(CUdeviceptr address)
{
    FAKE_ENTER("cuMemFree");
    void* p = reinterpret_cast<void*>(address);
    Modules& m = modules();
    std::lock_guard lock(m.mutex);
    if (m.allocations.erase(p) == 0)
        return CUDA_ERROR_INVALID_VALUE;
    std::free(p);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeMemcpyHtoD(CUdeviceptr dst, const void* src, size_t bytes)
{
    FAKE_ENTER("cuMemcpyHtoD");
    std::memcpy(reinterpret_cast<void*>(dst), src, bytes);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeMemcpyDtoH(void* dst, CUdeviceptr src, size_t bytes)
{
    FAKE_ENTER("cuMemcpyDtoH");
    std::memcpy(dst, reinterpret_cast<const void*>(src), bytes);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fakeMemsetD32(CUdeviceptr dst, unsigned value, size_t count)
{
    FAKE_ENTER("cuMemsetD32");
    std::fill_n(reinterpret_cast<unsigned*>(dst), count, value);
    return CUDA_SUCCESS;
}

const Export kModuleExports[] = {
    FAKE_EXPORT("cuModuleLoad", 2000, fakeModuleLoad),
    FAKE_EXPORT("cuModuleLoadDataEx", 2010, fakeModuleLoadDataEx),
    FAKE_EXPORT("cuModuleUnload", 2000, fakeModuleUnload),
    FAKE_EXPORT("cuModuleGetFunction", 2000, fakeModuleGetFunction),
    FAKE_EXPORT("cuModuleGetGlobal", 3020, fakeModuleGetGlobal),
    FAKE_EXPORT("cuModuleGetFunctionCount", 12040, fakeModuleGetFunctionCount),
    FAKE_EXPORT("cuModuleEnumerateFunctions", 12040, fakeModuleEnumerateFunctions),
    FAKE_EXPORT("cuFuncGetAttribute", 2020, fakeFuncGetAttribute),
    FAKE_EXPORT("cuFuncSetAttribute", 9000, fakeFuncSetAttribute),
    FAKE_EXPORT("cuFuncSetCacheConfig", 3000, fakeFuncSetCacheConfig),
    FAKE_EXPORT("cuFuncGetName", 12030, fakeFuncGetName),
    FAKE_EXPORT("cuFuncGetParamInfo", 12040, fakeFuncGetParamInfo),
    FAKE_EXPORT("cuFuncLoad", 12040, fakeFuncLoad),
    FAKE_EXPORT("cuLaunchKernel", 4000, fakeLaunchKernel),
    FAKE_EXPORT("cuLaunchKernelEx", 11060, fakeLaunchKernelEx),
    FAKE_EXPORT("cuOccupancyMaxActiveBlocksPerMultiprocessor", 6050, fakeOccupancyMaxActiveBlocks),
    FAKE_EXPORT("cuOccupancyMaxPotentialBlockSize", 6050, fakeOccupancyMaxPotentialBlockSize),
    FAKE_EXPORT("cuMemAlloc", 3020, fakeMemAlloc),
    FAKE_EXPORT("cuMemFree", 3020, fakeMemFree),
    FAKE_EXPORT("cuMemcpyHtoD", 3020, fakeMemcpyHtoD),
    FAKE_EXPORT("cuMemcpyDtoH", 3020, fakeMemcpyDtoH),
    FAKE_EXPORT("cuMemsetD32", 3020, fakeMemsetD32),
};

} // namespace

std::span<const Export> fake::moduleExports()
{
    return kModuleExports;
}

void fake::resetModules()
{
    Modules& m = modules();
    std::lock_guard lock(m.mutex);
    m.live.clear();
    m.lastJitOptions.clear();
}

extern "C" {

int cuctx_fake_live_modules()
{
    Modules& m = modules();
    std::lock_guard lock(m.mutex);
    return static_cast<int>(m.live.size());
}

int cuctx_fake_live_allocations()
{
    Modules& m = modules();
    std::lock_guard lock(m.mutex);
    return static_cast<int>(m.allocations.size());
}

int cuctx_fake_last_jit_option(int option, unsigned long long* value)
{
    Modules& m = modules();
    std::lock_guard lock(m.mutex);
    const auto it = m.lastJitOptions.find(option);
    if (it == m.lastJitOptions.end())
        return 0;
    if (value != nullptr)
        *value = it->second;
    return 1;
}

} // extern "C"

/* SPDX-License-Identifier: MIT */
/* A host that does not link cuctx: it dlopen()s a plugin that does, and runs it. */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char** argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: host PLUGIN\n");
        return 2;
    }
    void* plugin = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (plugin == NULL) {
        fprintf(stderr, "host: dlopen: %s\n", dlerror());
        return 1;
    }
    int (*run)(void) = (int (*)(void))dlsym(plugin, "cuctx_plugin_run");
    if (run == NULL) {
        fprintf(stderr, "host: dlsym: %s\n", dlerror());
        return 1;
    }
    int result = run();
    printf("host: cuctx_plugin_run() = %d\n", result);
    return result;
}

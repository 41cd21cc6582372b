/* core/dl.h: a library's functions into a table, loaded at run time. */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "core/dl.h"

static void load(ns_dl_lib *lib) {
    void *h = NULL;
    for (size_t i = 0; !h && i < lib->n_names; ++i) h = dlopen(lib->names[i], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(lib->why, sizeof lib->why, "%s%s", e ? e : (lib->n_names ? lib->names[0] : "?"),
                 e ? "" : ": not found");
        return;
    }
    for (size_t i = 0; i < lib->n_syms; ++i) {
        void *f = dlsym(h, lib->syms[i].name);
        if (!f) {
            snprintf(lib->why, sizeof lib->why, "%s has no %s", lib->names[0], lib->syms[i].name);
            dlclose(h);
            return;
        }
        memcpy((char *)lib->api + lib->syms[i].offset, &f, sizeof f);
    }
    lib->loaded = 1;
}

int ns_dl_ready(ns_dl_lib *lib) {
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&lock);
    if (!lib->tried) load(lib);
    lib->tried = 1;
    const int loaded = lib->loaded;
    pthread_mutex_unlock(&lock);
    return loaded;
}

/* core/dl.h: a library's functions into a table, loaded at run time. */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "core/dl.h"

int ns_dl_table(const char *const *names, size_t n_names, const ns_dl_sym *syms, size_t n_syms, void *api,
                char *why, size_t why_size) {
    void *h = NULL;
    for (size_t i = 0; !h && i < n_names; ++i) h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(why, why_size, "%s", e ? e : (n_names ? names[0] : "?"));
        snprintf(why + strlen(why), why_size - strlen(why), "%s", e ? "" : ": not found");
        return 0;
    }
    for (size_t i = 0; i < n_syms; ++i) {
        void *f = dlsym(h, syms[i].name);
        if (!f) {
            snprintf(why, why_size, "%s has no %s", names[0], syms[i].name);
            dlclose(h);
            return 0;
        }
        memcpy((char *)api + syms[i].offset, &f, sizeof f);
    }
    return 1;
}

/* ns_network_read (include/neurosolve/network.h): a file holding a network,
 * the native text format (netfile.c, docs/networks.md "Network files") or a
 * SONATA config (sonata.c, "SONATA"), told apart by its first character.
 * Above both readers, so that neither calls the other. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/file.h"
#include "neurosolve/network.h"

ns_status ns_network_read(const char *path, ns_network_t **out) {
    if (!path || !out) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_network_read: NULL argument");
    *out = NULL;
    char *buf = NULL;
    size_t n = 0;
    ns_status st = ns_file_read_all(path, (size_t)256 << 20, "network file", &buf, &n);
    /* a JSON object: a SONATA config (docs/networks.md, "SONATA") */
    size_t first = 0;
    while (st == NS_OK && first < n && isspace((unsigned char)buf[first])) ++first;
    if (st == NS_OK && first < n && buf[first] == '{') {
        free(buf);
        return ns_network_read_sonata(path, NULL, out);
    }
    if (st == NS_OK) {
        /* relative paths start from the file's folder */
        char *dir = malloc(strlen(path) + 2);
        if (!dir) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", path);
        else {
            strcpy(dir, path);
            char *slash = strrchr(dir, '/');
            if (!slash) strcpy(dir, ".");
            else if (slash == dir) dir[1] = 0;
            else *slash = 0;
            st = ns_network_parse(buf, n, path, dir, out);
            free(dir);
        }
    }
    free(buf);
    return st;
}

/* A tiny streaming JSON writer for the --json output of the CLI. */
#include <math.h>

#include "cli.h"

static void separator(cli_json *j) {
    if (j->need_comma[j->depth]) fputc(',', j->out);
    j->need_comma[j->depth] = 1;
}

static void write_string(FILE *out, const char *s) {
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; ++p) {
        switch (*p) {
        case '"': fputs("\\\"", out); break;
        case '\\': fputs("\\\\", out); break;
        case '\n': fputs("\\n", out); break;
        case '\r': fputs("\\r", out); break;
        case '\t': fputs("\\t", out); break;
        default:
            if (*p < 0x20) fprintf(out, "\\u%04x", *p);
            else fputc(*p, out);
        }
    }
    fputc('"', out);
}

void json_key(cli_json *j, const char *key) {
    separator(j);
    if (key) {
        write_string(j->out, key);
        fputc(':', j->out);
    }
}

static void open_container(cli_json *j, const char *key, char c) {
    json_key(j, key);
    fputc(c, j->out);
    if (j->depth < 31) j->depth++;
    j->need_comma[j->depth] = 0;
}

static void close_container(cli_json *j, char c) {
    fputc(c, j->out);
    if (j->depth > 0) j->depth--;
}

void json_begin(cli_json *j, FILE *out) {
    j->out = out;
    j->depth = 0;
    j->need_comma[0] = 0;
    fputc('{', out);
    j->depth = 1;
    j->need_comma[1] = 0;
}

void json_end(cli_json *j) {
    close_container(j, '}');
    fputc('\n', j->out);
    fflush(j->out);
}

void json_object_begin(cli_json *j, const char *key) { open_container(j, key, '{'); }
void json_object_end(cli_json *j) { close_container(j, '}'); }
void json_array_begin(cli_json *j, const char *key) { open_container(j, key, '['); }
void json_array_end(cli_json *j) { close_container(j, ']'); }

void json_string(cli_json *j, const char *key, const char *value) {
    json_key(j, key);
    write_string(j->out, value);
}

void json_int(cli_json *j, const char *key, long long value) {
    json_key(j, key);
    fprintf(j->out, "%lld", value);
}

void json_double(cli_json *j, const char *key, double value) {
    json_key(j, key);
    if (isfinite(value)) fprintf(j->out, "%.17g", value);
    else fputs("null", j->out);
}

void json_bool(cli_json *j, const char *key, int value) {
    json_key(j, key);
    fputs(value ? "true" : "false", j->out);
}

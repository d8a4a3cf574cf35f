/* fuzz/replay.c — a plain main() for the fuzz harnesses: runs LLVMFuzzerTestOneInput on every
 * file named on the command line, or on every regular file of a directory named there, and
 * prints how many it ran. Linked with each harness into replay_<target> by tests/CMakeLists.txt,
 * so ctest replays the seeds and every input a fuzzer once failed on (tests/fuzz_regressions/)
 * with any compiler, without libFuzzer. A failed check aborts, as under the fuzzer.
 */
#define _POSIX_C_SOURCE 200809L /* opendir, readdir */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        exit(1);
    }
    size_t cap = 4096, n = 0, got;
    uint8_t *buf = malloc(cap);
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            uint8_t *b = cap < ((size_t)1 << 26) ? realloc(buf, cap *= 2) : NULL;
            if (!b)
                free(buf);
            buf = b;
        }
    }
    fclose(f);
    if (!buf) {
        fprintf(stderr, "%s: too large or out of memory\n", path);
        exit(1);
    }
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    return 1;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
    int count = 0;
    for (int i = 1; i < argc; i++) {
        struct stat sb;
        if (stat(argv[i], &sb) != 0) {
            perror(argv[i]);
            return 1;
        }
        if (!S_ISDIR(sb.st_mode)) {
            count += run_file(argv[i]);
            continue;
        }
        DIR *d = opendir(argv[i]);
        if (!d) {
            perror(argv[i]);
            return 1;
        }
        char *names[4096];
        size_t n = 0;
        struct dirent *e;
        while ((e = readdir(d)) && n < sizeof names / sizeof names[0]) {
            size_t len = strlen(argv[i]) + strlen(e->d_name) + 2;
            char *p = malloc(len);
            if (!p)
                return 1;
            snprintf(p, len, "%s/%s", argv[i], e->d_name);
            if (e->d_name[0] != '.' && stat(p, &sb) == 0 && S_ISREG(sb.st_mode))
                names[n++] = p;
            else
                free(p);
        }
        closedir(d);
        qsort(names, n, sizeof names[0], cmp_str); /* same order every run */
        for (size_t k = 0; k < n; k++) {
            count += run_file(names[k]);
            free(names[k]);
        }
    }
    fprintf(stderr, "replayed %d inputs\n", count); /* stdout may be captured (fuzz_cli) */
    return count > 0 ? 0 : 1;
}

/* fuzz/fuzz_cli.c — libFuzzer harness for the command line: the input becomes an argv and runs
 * through cli_main (src/cli/main.c) in-process, so every option path, file read and command is
 * exercised. The exit code must be 0 or 2 (1 means an internal error, which no input may cause),
 * and with --json a successful command's stdout must be one JSON document.
 *
 * Input format: arguments one per line (after the implicit "meshplan"); optionally a line "---"
 * followed by the contents of a file. The argument "@F" is replaced by the path of that file
 * (absent when the input has no "---" part: a missing file), "@D" by the path of a directory.
 * Example: "predict\n--model\n@F\n--gpu\nh100-sxm5-80gb\n--gpus\n8\n---\n{...config.json...}".
 * The value of -o/--output (trace writes its Chrome trace there) is always replaced by a file in
 * the harness's scratch folder.
 * Seeds: fuzz/seeds/cli/. Run with -close_fd_mask=2 to silence the command's stderr
 * (fuzz/run.sh does); its stdout goes to a scratch file read back for the JSON check.
 */
#define _POSIX_C_SOURCE 200809L /* mkdtemp, pread, ftruncate */
#include <fcntl.h>
#include <unistd.h>

#include "../src/cli/cli.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_ARGS 64

static char g_dir[256], g_file[300], g_out[300], g_written[300];
static int g_out_fd = -1;

static void cleanup(void)
{
    unlink(g_file);
    unlink(g_out);
    unlink(g_written);
    rmdir(g_dir);
}

static void setup(void)
{
    if (g_out_fd >= 0)
        return;
    const char *tmp = getenv("TMPDIR");
    snprintf(g_dir, sizeof g_dir, "%s/meshplan-fuzz-cli.XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (!mkdtemp(g_dir))
        abort();
    snprintf(g_file, sizeof g_file, "%s/input", g_dir);
    snprintf(g_out, sizeof g_out, "%s/stdout", g_dir);
    snprintf(g_written, sizeof g_written, "%s/written", g_dir);
    g_out_fd = open(g_out, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (g_out_fd < 0)
        abort();
    atexit(cleanup);
    fflush(stdout);
    if (dup2(g_out_fd, STDOUT_FILENO) < 0)
        abort();
}

/* Everything the command printed on stdout in this run, NUL-terminated (caller frees). */
static char *captured_stdout(size_t *len)
{
    fflush(stdout);
    off_t n = lseek(STDOUT_FILENO, 0, SEEK_END);
    char *buf = malloc((size_t)(n > 0 ? n : 0) + 1);
    if (!buf)
        abort();
    ssize_t got = n > 0 ? pread(STDOUT_FILENO, buf, (size_t)n, 0) : 0;
    *len = got > 0 ? (size_t)got : 0;
    buf[*len] = '\0';
    return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > FZ_MAX_INPUT)
        return 0;
    setup();
    char *text = fz_cstr(data, size);
    /* Split off the file part. */
    char *file = NULL;
    size_t file_len = 0;
    if (!strncmp(text, "---\n", 4)) {
        file = text + 4;
        text[0] = '\0';
    } else {
        char *sep = strstr(text, "\n---\n");
        if (sep) {
            *sep = '\0';
            file = sep + 5;
        }
    }
    if (file)
        file_len = size - (size_t)(file - text); /* the file part may hold NUL bytes */
    unlink(g_file);
    if (file) {
        int fd = open(g_file, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd < 0 || (file_len && write(fd, file, file_len) != (ssize_t)file_len))
            abort();
        close(fd);
    }
    char *argv[MAX_ARGS + 2];
    int argc = 0;
    argv[argc++] = "meshplan";
    int json = 0;
    for (char *line = text; line && argc <= MAX_ARGS;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        if (!nl && !line[0] && argc > 1)
            break; /* no empty argument from a trailing newline */
        if (!strcmp(line, "@F"))
            argv[argc++] = g_file;
        else if (!strcmp(line, "@D"))
            argv[argc++] = g_dir;
        else
            argv[argc++] = line;
        json |= !strcmp(line, "--json");
        line = nl ? nl + 1 : NULL;
    }
    argv[argc] = NULL;
    /* A command that writes a file (trace -o FILE) writes it in the scratch folder, never where
     * the input says. */
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "-o") || !strcmp(argv[i], "--output"))
            argv[i + 1] = g_written;

    /* `web` serves until a signal: not a command that returns (tests/test_web.c and
     * tests/web_e2e.py cover it). */
    if (argc > 1 && !strcmp(argv[1], "web")) {
        free(text);
        return 0;
    }
    if (ftruncate(STDOUT_FILENO, 0) != 0 || lseek(STDOUT_FILENO, 0, SEEK_SET) != 0)
        abort();
    int rc = cli_main(argc, argv);
    size_t out_len;
    char *out = captured_stdout(&out_len);
    FZ_CHECK(rc == 0 || rc == EXIT_INPUT, "exit code %d (argv[1] \"%s\")", rc,
             argc > 1 ? argv[1] : "");
    if (rc == 0 && json && argc > 1 &&
        (!strcmp(argv[1], "predict") || !strcmp(argv[1], "validate") || !strcmp(argv[1], "catalog"))) {
        json_error_t err;
        json_t *root = json_loadb(out, out_len, 0, &err);
        FZ_CHECK(root != NULL, "%s --json: stdout is not JSON: %s\n%.1000s", argv[1], err.text, out);
        if (!strcmp(argv[1], "predict"))
            FZ_CHECK(json_is_number(json_object_get(root, "step_s")) &&
                         json_is_number(json_object_get(root, "mfu")),
                     "predict --json without step_s or mfu");
        json_decref(root);
    }
    free(out);
    free(text);
    return 0;
}

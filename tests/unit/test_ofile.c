/* Output files (core/ofile.h): what a path names survives being written
 * to. A regular file is replaced whole and no temporary file is left; a
 * link to a regular file stays a link; a FIFO, a character device and a
 * link to a descriptor are written in place and stay what they were; a
 * full device reports ENOSPC; a directory is refused; an aborted output
 * leaves the old file and no temporary. Device nodes are made in a scratch
 * folder with mknod (1,3 is the null device and 1,7 the full one on Linux,
 * Documentation/admin-guide/devices.txt); where mknod is not permitted (not
 * root) those two cases are skipped and say so. */
#define _DEFAULT_SOURCE /* mknod, makedev, S_IFCHR */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "../../sim/core/ofile.h"

static char dir[256];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "%s/ofile-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    DIR *d = opendir(dir);
    struct dirent *e;
    char p[512];
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.') snprintf(p, sizeof p, "%s/%s", dir, e->d_name), remove(p);
    if (d) closedir(d);
    return rmdir(dir);
}

static const char *at(const char *name)
{
    static char p[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(p[k], sizeof p[k], "%s/%s", dir, name);
    return p[k];
}

static char *slurp(const char *path)
{
    static char buf[256];
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* Entries in the scratch folder, to see that no temporary is left. */
static int entries(void)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') n++;
    closedir(d);
    return n;
}

static mode_t kind(const char *path)
{
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    return st.st_mode & S_IFMT;
}

static void test_regular_replaced_whole(void **state)
{
    (void)state;
    ss_err err;
    ss_err_clear(&err);
    assert_int_equal(of_write_text(at("a.json"), "{\"x\":1}", &err), SS_OK);
    assert_string_equal(slurp(at("a.json")), "{\"x\":1}\n");
    assert_int_equal(of_write_text(at("a.json"), "two\n", &err), SS_OK);
    assert_string_equal(slurp(at("a.json")), "two\n");
    assert_int_equal(entries(), 1);
}

static void test_link_to_regular_stays_link(void **state)
{
    (void)state;
    ss_err err;
    ss_err_clear(&err);
    assert_int_equal(of_write_text(at("target"), "old", &err), SS_OK);
    assert_int_equal(symlink("target", at("link")), 0);
    assert_int_equal(of_write_text(at("link"), "new", &err), SS_OK);
    assert_int_equal(kind(at("link")), S_IFLNK);
    assert_string_equal(slurp(at("target")), "new\n");
    assert_int_equal(entries(), 2);
}

static void test_fifo_written_in_place(void **state)
{
    (void)state;
    ss_err err;
    ss_err_clear(&err);
    assert_int_equal(mkfifo(at("fifo"), 0600), 0);
    int rd = open(at("fifo"), O_RDONLY | O_NONBLOCK); /* a reader, so the writer's open returns */
    assert_true(rd >= 0);
    assert_int_equal(of_write_text(at("fifo"), "through the pipe", &err), SS_OK);
    char buf[64] = {0};
    assert_int_equal(read(rd, buf, sizeof buf - 1), 17);
    assert_string_equal(buf, "through the pipe\n");
    close(rd);
    assert_int_equal(kind(at("fifo")), S_IFIFO);
}

static void test_descriptor_link_in_place(void **state)
{
    (void)state;
    ss_err err;
    ss_err_clear(&err);
    int p[2];
    assert_int_equal(pipe(p), 0);
    char target[64];
    snprintf(target, sizeof target, "/proc/self/fd/%d", p[1]);
    assert_int_equal(symlink(target, at("out")), 0); /* as /dev/stdout is to /proc/self/fd/1 */
    assert_int_equal(of_write_text(at("out"), "via fd", &err), SS_OK);
    snprintf(target, sizeof target, "/dev/fd/%d", p[1]);
    assert_int_equal(of_write_text(target, "again", &err), SS_OK);
    close(p[1]);
    char buf[64] = {0};
    assert_int_equal(read(p[0], buf, sizeof buf - 1), 13);
    assert_string_equal(buf, "via fd\nagain\n");
    close(p[0]);
    assert_int_equal(kind(at("out")), S_IFLNK);
    assert_int_equal(entries(), 1);
}

static void test_devices(void **state)
{
    (void)state;
    if (mknod(at("null"), S_IFCHR | 0600, makedev(1, 3)) != 0) {
        print_message("skipped: mknod needs root (%s)\n", strerror(errno));
        skip();
    }
    assert_int_equal(mknod(at("full"), S_IFCHR | 0600, makedev(1, 7)), 0);
    ss_err err;
    ss_err_clear(&err);
    assert_int_equal(of_write_text(at("null"), "gone", &err), SS_OK);
    assert_int_equal(kind(at("null")), S_IFCHR);
    assert_int_equal(of_write_text(at("full"), "no room", &err), SS_E_IO);
    assert_non_null(strstr(err.msg, strerror(ENOSPC)));
    assert_non_null(strstr(err.where, "full"));
    assert_int_equal(kind(at("full")), S_IFCHR);
}

static void test_refused_and_aborted(void **state)
{
    (void)state;
    ss_err err;
    ss_err_clear(&err);
    assert_int_equal(mkdir(at("d"), 0700), 0);
    assert_int_equal(of_write_text(at("d"), "x", &err), SS_E_IO);
    assert_non_null(strstr(err.msg, "a directory"));
    ss_err_clear(&err);
    assert_int_equal(of_write_text(at("keep"), "old", &err), SS_OK);
    of_file *f;
    assert_int_equal(of_open(&f, at("keep"), &err), SS_OK);
    fputs("half", of_stream(f));
    of_abort(f);
    assert_string_equal(slurp(at("keep")), "old\n");
    assert_int_equal(entries(), 2);
    ss_err_clear(&err);
    assert_int_equal(of_write_text(at("no/such/dir/x"), "x", &err), SS_E_IO);
    assert_non_null(strstr(err.msg, strerror(ENOENT)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_regular_replaced_whole, setup, teardown),
        cmocka_unit_test_setup_teardown(test_link_to_regular_stays_link, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fifo_written_in_place, setup, teardown),
        cmocka_unit_test_setup_teardown(test_descriptor_link_in_place, setup, teardown),
        cmocka_unit_test_setup_teardown(test_devices, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refused_and_aborted, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

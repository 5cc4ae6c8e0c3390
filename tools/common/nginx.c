/* SPDX-License-Identifier: MIT */
/*
 * nginx.c - start, probe and stop a private nginx (see nginx.h).
 *
 * The configuration keeps nginx inside its directory: pid file, error and access logs
 * and the five temp paths of the http modules all live there, so it runs without root
 * and touches nothing under /var or /run. When the caller runs as root, a "user"
 * directive names root's own user, because nginx's default worker user ("nobody") could
 * not read the caller's private (0700) temp directory; as any other user the directive
 * would only draw a warning, so it is left out.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include "nginx.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#define READY_FILE    "band-ready.txt"
#define START_TRIES   5
#define READY_SECONDS 15
#define STOP_SECONDS  10

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
        /* sleep the rest */
    }
}

static int is_executable(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

int nginx_find(char *out, size_t outlen)
{
    const char *path = getenv("PATH");
    if (path != NULL) {
        const char *p = path;
        for (;;) {
            size_t len = strcspn(p, ":");
            if (len > 0) { /* an empty entry (current directory) is skipped on purpose */
                int n = snprintf(out, outlen, "%.*s/nginx", (int)len, p);
                if (n > 0 && (size_t)n < outlen && is_executable(out))
                    return 0;
            }
            if (p[len] == '\0')
                break;
            p += len + 1;
        }
    }
    static const char *const fallback[] = {"/usr/sbin/nginx", "/sbin/nginx"};
    for (size_t i = 0; i < sizeof(fallback) / sizeof(fallback[0]); i++) {
        if (is_executable(fallback[i]) && strlen(fallback[i]) < outlen) {
            memcpy(out, fallback[i], strlen(fallback[i]) + 1);
            return 0;
        }
    }
    return -1;
}

/* nginx.conf takes these paths inside double quotes; refuse what would need escaping
 * there ($ starts a variable in "root"). */
static int conf_safe(const char *path)
{
    for (const char *p = path; *p != '\0'; p++)
        if (*p == '"' || *p == '\\' || *p == '$' || (unsigned char)*p < 0x20)
            return 0;
    return 1;
}

/* A port of 127.0.0.1 that is free now: bind port 0, read the port, close. */
static unsigned free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return 0;
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    socklen_t len = sizeof(a);
    unsigned port = 0;
    if (bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    close(fd);
    return port;
}

static int write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        fprintf(stderr, "nginx: cannot create %s: %s\n", path, strerror(errno));
        return -1;
    }
    int ok = fputs(text, f) >= 0;
    ok = (fclose(f) == 0) && ok;
    if (!ok)
        fprintf(stderr, "nginx: writing %s failed\n", path);
    return ok ? 0 : -1;
}

static int write_conf(const struct nginx *ng, const char *conf, const char *docroot, uint64_t rate)
{
    char user[300] = "";
    if (geteuid() == 0) {
        struct passwd *pw = getpwuid(geteuid());
        struct group *gr = getgrgid(getegid());
        if (pw != NULL && gr != NULL && conf_safe(pw->pw_name) && conf_safe(gr->gr_name))
            snprintf(user, sizeof(user), "user \"%s\" \"%s\";\n", pw->pw_name, gr->gr_name);
    }
    FILE *f = fopen(conf, "w");
    if (f == NULL) {
        fprintf(stderr, "nginx: cannot create %s: %s\n", conf, strerror(errno));
        return -1;
    }
    const char *d = ng->dir;
    fprintf(f,
            "# Written by band (tools/common/nginx.c); removed with this directory.\n"
            "worker_processes 2;\n"
            "pid \"%s/nginx.pid\";\n"
            "error_log \"%s/error.log\" warn;\n"
            "%s"
            "events { worker_connections 256; }\n"
            "http {\n"
            "    access_log \"%s/access.log\";\n"
            "    client_body_temp_path \"%s/temp/body\";\n"
            "    proxy_temp_path \"%s/temp/proxy\";\n"
            "    fastcgi_temp_path \"%s/temp/fastcgi\";\n"
            "    uwsgi_temp_path \"%s/temp/uwsgi\";\n"
            "    scgi_temp_path \"%s/temp/scgi\";\n"
            "    default_type application/octet-stream;\n"
            "    sendfile on;\n"
            "    keepalive_requests 100000;\n"
            "    server {\n"
            "        listen 127.0.0.1:%u;\n"
            "        server_name localhost;\n"
            "        root \"%s\";\n"
            "        limit_rate %" PRIu64 ";\n"
            "    }\n"
            "}\n",
            d, d, user, d, d, d, d, d, d, ng->port, docroot, rate);
    if (fclose(f) != 0) {
        fprintf(stderr, "nginx: writing %s failed\n", conf);
        return -1;
    }
    return 0;
}

/* Starts the master process. Returns its pid, or -1. */
static pid_t spawn(const struct nginx *ng, const char *conf)
{
    char out[NGINX_PATH_MAX + 16];
    snprintf(out, sizeof(out), "%s/stderr.log", ng->dir);
    char *argv[] = {(char *)ng->bin, "-p", (char *)ng->dir, "-c",
                    (char *)conf,    "-g", "daemon off;",   NULL};
#ifdef __linux__
    pid_t parent = getpid();
#endif
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "nginx: fork: %s\n", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        /* The child: only async-signal-safe calls until exec. */
        setpgid(0, 0); /* a ^C in the terminal reaches the caller, which stops nginx */
#ifdef __linux__
        prctl(PR_SET_PDEATHSIG, SIGTERM); /* if the caller dies, so does the server */
        if (getppid() != parent)
            _exit(127);
#endif
        int in = open("/dev/null", O_RDONLY);
        int log = open(out, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (in < 0 || log < 0 || dup2(in, 0) < 0 || dup2(log, 1) < 0 || dup2(log, 2) < 0)
            _exit(127);
        execv(ng->bin, argv);
        _exit(127);
    }
    return pid;
}

/* 1 when the server on @port answers GET /READY_FILE with @token, else 0. */
static int probe(unsigned port, const char *token)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return 0;
    struct timeval tv = {1, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons((uint16_t)port);
    char buf[2048];
    size_t got = 0;
    int ok = 0;
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0) {
        static const char req[] = "GET /" READY_FILE " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
        if (send(fd, req, sizeof(req) - 1, 0) == (ssize_t)(sizeof(req) - 1)) {
            ssize_t n;
            while (got < sizeof(buf) - 1 && (n = recv(fd, buf + got, sizeof(buf) - 1 - got, 0)) > 0)
                got += (size_t)n;
            buf[got] = '\0';
            ok = strncmp(buf, "HTTP/1.1 200", 12) == 0 && strstr(buf, token) != NULL;
        }
    }
    close(fd);
    return ok;
}

/* Whether the server's logs say the port was taken. */
static int port_was_taken(const struct nginx *ng)
{
    static const char *const logs[] = {"error.log", "stderr.log"};
    char path[NGINX_PATH_MAX + 16], line[1024];
    int taken = 0;
    for (size_t i = 0; i < 2 && !taken; i++) {
        snprintf(path, sizeof(path), "%s/%s", ng->dir, logs[i]);
        FILE *f = fopen(path, "r");
        if (f == NULL)
            continue;
        while (!taken && fgets(line, sizeof(line), f) != NULL)
            taken = strstr(line, "Address already in use") != NULL;
        fclose(f);
    }
    return taken;
}

/* Waits for the child to serve the probe file. 0: ready; 1: it exited; -1: timed out. */
static int wait_ready(struct nginx *ng, const char *token)
{
    for (int i = 0; i < READY_SECONDS * 100; i++) {
        int status;
        pid_t r = waitpid(ng->pid, &status, WNOHANG);
        if (r == ng->pid) {
            ng->pid = 0;
            return 1;
        }
        if (probe(ng->port, token))
            return 0;
        sleep_ms(10);
    }
    return -1;
}

void nginx_print_log(const struct nginx *ng)
{
    static const char *const logs[] = {"stderr.log", "error.log"};
    char path[NGINX_PATH_MAX + 16], line[1024];
    for (size_t i = 0; i < 2; i++) {
        snprintf(path, sizeof(path), "%s/%s", ng->dir, logs[i]);
        FILE *f = fopen(path, "r");
        if (f == NULL)
            continue;
        long starts[20]; /* where the last 20 lines begin */
        size_t count = 0;
        long off = 0;
        while (fgets(line, sizeof(line), f) != NULL) {
            starts[count % 20] = off;
            count++;
            off = ftell(f);
        }
        if (count > 0 && fseek(f, starts[count > 20 ? count % 20 : 0], SEEK_SET) == 0) {
            fprintf(stderr, "---- %s\n", path);
            while (fgets(line, sizeof(line), f) != NULL)
                fprintf(stderr, "  %s", line);
        }
        fclose(f);
    }
}

int nginx_start(struct nginx *ng, const char *dir, const char *docroot, uint64_t rate)
{
    ng->pid = 0;
    ng->port = 0;
    if (nginx_find(ng->bin, sizeof(ng->bin)) != 0) {
        fprintf(stderr, "nginx: not found on PATH, in /usr/sbin or in /sbin "
                        "(Debian: apt-get install nginx-light, or run 'make deps')\n");
        return -1;
    }
    if (!conf_safe(dir) || !conf_safe(docroot)) {
        fprintf(stderr,
                "nginx: the temporary path '%s' has a character nginx.conf would need "
                "escaped (\" \\ $ or a control character); set TMPDIR to a plainer path\n",
                dir);
        return -1;
    }
    if (snprintf(ng->dir, sizeof(ng->dir), "%s", dir) >= (int)sizeof(ng->dir)) {
        fprintf(stderr, "nginx: path too long: %s\n", dir);
        return -1;
    }
    char path[NGINX_PATH_MAX + 32], conf[NGINX_PATH_MAX + 32];
    static const char *const subdirs[] = {"", "/temp"};
    for (size_t i = 0; i < 2; i++) {
        snprintf(path, sizeof(path), "%s%s", dir, subdirs[i]);
        if (mkdir(path, 0700) != 0) {
            fprintf(stderr, "nginx: cannot create %s: %s\n", path, strerror(errno));
            return -1;
        }
    }

    /* A probe file with a token only this run knows, so a foreign server on a reused port
     * is never mistaken for ours. */
    char token[64];
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    snprintf(token, sizeof(token), "band-%ld-%ld-%ld\n", (long)getpid(), (long)now.tv_sec,
             now.tv_nsec);
    snprintf(path, sizeof(path), "%s/" READY_FILE, docroot);
    if (write_text(path, token) != 0)
        return -1;

    snprintf(conf, sizeof(conf), "%s/nginx.conf", dir);
    for (int attempt = 1; attempt <= START_TRIES; attempt++) {
        ng->port = free_port();
        if (ng->port == 0) {
            fprintf(stderr, "nginx: cannot find a free port on 127.0.0.1: %s\n", strerror(errno));
            return -1;
        }
        if (write_conf(ng, conf, docroot, rate) != 0)
            return -1;
        ng->pid = spawn(ng, conf);
        if (ng->pid < 0) {
            ng->pid = 0;
            return -1;
        }
        int r = wait_ready(ng, token);
        if (r == 0)
            return 0;
        if (r == 1 && port_was_taken(ng) && attempt < START_TRIES)
            continue; /* someone took the port between our check and nginx's bind */
        fprintf(stderr, "nginx: %s %s\n", ng->bin,
                r == 1 ? "exited during start-up" : "did not answer within 15 s");
        nginx_print_log(ng);
        nginx_stop(ng);
        return -1;
    }
    return -1;
}

int nginx_stop(struct nginx *ng)
{
    if (ng->pid <= 0)
        return 0;
    pid_t pid = ng->pid;
    ng->pid = 0;
    kill(pid, SIGTERM);
    int status = 0;
    for (int i = 0; i < STOP_SECONDS * 100; i++) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid) {
            if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
                return 0;
            if (WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM)
                return 0; /* SIGTERM arrived before nginx installed its handler */
            fprintf(stderr, "nginx: ended with %s %d\n", WIFEXITED(status) ? "exit code" : "signal",
                    WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
            return -1;
        }
        if (r < 0 && errno != EINTR)
            break;
        sleep_ms(10);
    }
    fprintf(stderr, "nginx: did not stop within %d s; killing it\n", STOP_SECONDS);
    kill(-pid, SIGKILL); /* its own process group: master and workers */
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return -1;
}

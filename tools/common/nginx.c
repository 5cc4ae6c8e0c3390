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
 *
 * The request rate limit is one limit_req zone keyed by the server's name, a constant, so
 * every client shares one allowance. Requests beyond it and its burst are answered 429 by
 * a named location that adds Retry-After and RateLimit-Policy (add_header ... always: an
 * error status gets them too); by default every other answer states RateLimit-Policy as
 * well (nginx_opts.policy). The readiness
 * probe is served from the private directory in a location of its own, outside the limit and the
 * access log.
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
#include <stdarg.h>
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

#include "errtext.h"

#define READY_FILE    "band-ready.txt"
#define START_TRIES   5
#define READY_SECONDS 15
#define STOP_SECONDS  10

/* Formats the reason into @err (always terminated when @errlen > 0). */
static void set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (err == NULL || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    /* ap is initialised. clang-tidy 14's va_list check reports this call only when one
     * clang-tidy run analyses the file more than once (once per target compiling it). */
    // NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized)
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

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
    // NOLINTNEXTLINE(concurrency-mt-unsafe): no program built with it changes the environment
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

static int write_text(const char *path, const char *text, char *err, size_t errlen)
{
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        set_err(err, errlen, "nginx: cannot create %s: %s", path, errtext(errno));
        return -1;
    }
    int ok = fputs(text, f) >= 0;
    ok = (fclose(f) == 0) && ok;
    if (!ok)
        set_err(err, errlen, "nginx: writing %s failed", path);
    return ok ? 0 : -1;
}

/* The limit_req part of the server block, or "" when @o sets no request rate. */
static void req_limit_conf(const struct nginx_opts *o, char *zone, size_t zonelen, char *loc,
                           size_t loclen, char *named, size_t namedlen)
{
    zone[0] = loc[0] = named[0] = '\0';
    if (o->req_rate == 0)
        return;
    snprintf(zone, zonelen,
             "    limit_req_zone $server_name zone=band_requests:1m rate=%ur/s;\n"
             "    limit_req_status 429;\n"
             "    limit_req_log_level info;\n",
             o->req_rate);
    /* nginx refuses "burst=0"; leaving burst out means no burst. */
    char burst[32] = "";
    if (o->req_burst > 0)
        snprintf(burst, sizeof(burst), " burst=%u nodelay", o->req_burst);
    /* Every answer states the policy, as rate-limited APIs do, so a client can keep to it
     * before it is ever throttled. */
    char policy[64] = "";
    if (o->policy == NGINX_POLICY_ALL)
        snprintf(policy, sizeof(policy),
                 "            add_header RateLimit-Policy \"%u;w=1\" always;\n", o->req_rate);
    snprintf(loc, loclen,
             "            limit_req zone=band_requests%s;\n"
             "%s"
             "            error_page 429 @throttled;\n",
             burst, policy);
    char policy429[64] = "";
    if (o->policy != NGINX_POLICY_NONE)
        snprintf(policy429, sizeof(policy429),
                 "            add_header RateLimit-Policy \"%u;w=1\" always;\n", o->req_rate);
    snprintf(named, namedlen,
             "        location @throttled {\n"
             "            add_header Retry-After %u always;\n"
             "%s"
             "            return 429;\n"
             "        }\n",
             o->retry_after, policy429);
}

/* The "user" directive naming the effective user and group into @out, or "" when either
 * is unknown or its name would need escaping. getpwuid_r and getgrgid_r, not getpwuid and
 * getgrgid: the caller may have threads of its own. */
static void user_directive(char *out, size_t outlen)
{
    out[0] = '\0';
    char *buf = NULL;
    for (size_t cap = 2048; cap <= ((size_t)1 << 20); cap *= 2) {
        char *nb = realloc(buf, cap);
        if (nb == NULL)
            break;
        buf = nb;
        struct passwd pw, *pwp = NULL;
        struct group gr, *grp = NULL;
        size_t half = cap / 2; /* the user's entry in the first half, the group's after it */
        int e = getpwuid_r(geteuid(), &pw, buf, half, &pwp);
        if (e == 0 && pwp != NULL)
            e = getgrgid_r(getegid(), &gr, buf + half, cap - half, &grp);
        if (e == ERANGE)
            continue; /* an entry larger than its half: try again with twice the room */
        if (e == 0 && pwp != NULL && grp != NULL && conf_safe(pw.pw_name) &&
            conf_safe(gr.gr_name)) {
            int n = snprintf(out, outlen, "user \"%s\" \"%s\";\n", pw.pw_name, gr.gr_name);
            if (n < 0 || (size_t)n >= outlen)
                out[0] = '\0'; /* a cut directive would not parse */
        }
        break;
    }
    free(buf);
}

static int write_conf(const struct nginx *ng, const char *conf, const char *docroot,
                      const struct nginx_opts *o, char *err, size_t errlen)
{
    char user[300] = "";
    if (geteuid() == 0)
        user_directive(user, sizeof(user));
    char zone[256], loc[256], named[512];
    req_limit_conf(o, zone, sizeof(zone), loc, sizeof(loc), named, sizeof(named));
    FILE *f = fopen(conf, "w");
    if (f == NULL) {
        set_err(err, errlen, "nginx: cannot create %s: %s", conf, errtext(errno));
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
            "    log_format band '$status $body_bytes_sent $request_time \"$request\"';\n"
            "    access_log \"%s\" band;\n"
            "    client_body_temp_path \"%s/temp/body\";\n"
            "    proxy_temp_path \"%s/temp/proxy\";\n"
            "    fastcgi_temp_path \"%s/temp/fastcgi\";\n"
            "    uwsgi_temp_path \"%s/temp/uwsgi\";\n"
            "    scgi_temp_path \"%s/temp/scgi\";\n"
            "    default_type application/octet-stream;\n"
            "    sendfile on;\n"
            "    keepalive_requests 100000;\n"
            "%s"
            "    server {\n"
            "        listen 127.0.0.1:%u;\n"
            "        server_name localhost;\n"
            "        root \"%s\";\n"
            "        limit_rate %" PRIu64 ";\n"
            "        location = /" READY_FILE " {\n"
            "            root \"%s\";\n"
            "            access_log off;\n"
            "        }\n"
            "        location / {\n"
            "            log_not_found off;\n"
            "%s"
            "        }\n"
            "%s"
            "    }\n"
            "}\n",
            d, d, user, ng->access_log, d, d, d, d, d, zone, ng->port, docroot, o->conn_rate, d,
            loc, named);
    int bad = ferror(f); /* a write that failed before fclose's flush */
    if (fclose(f) != 0 || bad) {
        set_err(err, errlen, "nginx: writing %s failed", conf);
        return -1;
    }
    return 0;
}

/* Starts the master process. Returns its pid, or -1. */
static pid_t spawn(const struct nginx *ng, const char *conf, char *err, size_t errlen)
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
        set_err(err, errlen, "nginx: fork: %s", errtext(errno));
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

/* The last non-empty line of the server's error log (else of its stderr), without the
 * newline, into @out; "" when there is none. */
static void last_log_line(const struct nginx *ng, char *out, size_t outlen)
{
    static const char *const logs[] = {"error.log", "stderr.log"};
    char path[NGINX_PATH_MAX + 16], line[1024];
    out[0] = '\0';
    for (size_t i = 0; i < 2 && out[0] == '\0'; i++) {
        snprintf(path, sizeof(path), "%s/%s", ng->dir, logs[i]);
        FILE *f = fopen(path, "r");
        if (f == NULL)
            continue;
        while (fgets(line, sizeof(line), f) != NULL) {
            line[strcspn(line, "\r\n")] = '\0';
            if (line[0] != '\0') { /* cut to @outlen (gcc -O2 flags a snprintf here) */
                size_t l = strlen(line) < outlen - 1 ? strlen(line) : outlen - 1;
                memcpy(out, line, l);
                out[l] = '\0';
            }
        }
        fclose(f);
    }
}

int nginx_start(struct nginx *ng, const char *dir, const char *docroot,
                const struct nginx_opts *opts, char *err, size_t errlen)
{
    static const struct nginx_opts none = {.access_log = NULL};
    const struct nginx_opts *o = opts != NULL ? opts : &none;
    set_err(err, errlen, "%s", "");
    ng->pid = 0;
    ng->port = 0;
    ng->dir[0] = ng->access_log[0] = '\0';
    if (dir == NULL || docroot == NULL || dir[0] == '\0' || docroot[0] == '\0') {
        set_err(err, errlen, "nginx: no %s directory given",
                dir == NULL || dir[0] == '\0' ? "private" : "document root");
        return -1;
    }
    if (nginx_find(ng->bin, sizeof(ng->bin)) != 0) {
        set_err(err, errlen,
                "nginx: not found on PATH, in /usr/sbin or in /sbin "
                "(Debian: apt-get install nginx-light, or run 'make deps')");
        return -1;
    }
    const char *const paths[] = {dir, docroot, o->access_log};
    for (size_t i = 0; i < 3; i++) {
        if (paths[i] != NULL && !conf_safe(paths[i])) {
            set_err(err, errlen,
                    "nginx: the path '%s' has a character nginx.conf would need escaped "
                    "(\" \\ $ or a control character); use a plainer path (TMPDIR for "
                    "temporary ones)",
                    paths[i]);
            return -1;
        }
    }
    int n1 = snprintf(ng->dir, sizeof(ng->dir), "%s", dir);
    int n2 = o->access_log != NULL
                 ? snprintf(ng->access_log, sizeof(ng->access_log), "%s", o->access_log)
                 : snprintf(ng->access_log, sizeof(ng->access_log), "%s/access.log", dir);
    if (n1 < 0 || n2 < 0 || (size_t)n1 >= sizeof(ng->dir) || (size_t)n2 >= sizeof(ng->access_log)) {
        set_err(err, errlen, "nginx: path too long: %s",
                (size_t)n1 >= sizeof(ng->dir) ? dir : o->access_log);
        ng->dir[0] = ng->access_log[0] = '\0';
        return -1;
    }
    char path[NGINX_PATH_MAX + 32], conf[NGINX_PATH_MAX + 32];
    static const char *const subdirs[] = {"", "/temp"};
    for (size_t i = 0; i < 2; i++) {
        snprintf(path, sizeof(path), "%s%s", dir, subdirs[i]);
        if (mkdir(path, 0700) != 0) {
            set_err(err, errlen, "nginx: cannot create %s: %s", path, errtext(errno));
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
    snprintf(path, sizeof(path), "%s/" READY_FILE, dir);
    if (write_text(path, token, err, errlen) != 0)
        return -1;

    snprintf(conf, sizeof(conf), "%s/nginx.conf", dir);
    for (int attempt = 1; attempt <= START_TRIES; attempt++) {
        ng->port = free_port();
        if (ng->port == 0) {
            set_err(err, errlen, "nginx: cannot find a free port on 127.0.0.1: %s", errtext(errno));
            return -1;
        }
        if (write_conf(ng, conf, docroot, o, err, errlen) != 0)
            return -1;
        ng->pid = spawn(ng, conf, err, errlen);
        if (ng->pid < 0) {
            ng->pid = 0;
            return -1;
        }
        int r = wait_ready(ng, token);
        if (r == 0)
            return 0;
        if (r == 1 && port_was_taken(ng) && attempt < START_TRIES)
            continue; /* someone took the port between our check and nginx's bind */
        char last[512];
        last_log_line(ng, last, sizeof(last));
        set_err(err, errlen, "nginx: %s %s%s%s", ng->bin,
                r == 1 ? "exited during start-up" : "did not answer within 15 s",
                last[0] != '\0' ? ": " : "", last);
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

#include "libcurl_reference.h"

#include <curl/curl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>

static size_t discard(char *data, size_t size, size_t count, void *context) {
    (void)data;
    (void)context;
    return size * count;
}

static double cpu_seconds(void) {
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return (double)usage.ru_utime.tv_sec + usage.ru_utime.tv_usec / 1e6 + (double)usage.ru_stime.tv_sec +
           usage.ru_stime.tv_usec / 1e6;
}

static double now_seconds(void) {
    struct timespec time;
    clock_gettime(CLOCK_MONOTONIC, &time);
    return (double)time.tv_sec + time.tv_nsec / 1e9;
}

static void device_url(char *out, size_t size, const char *base_url, long index) {
    static const char digits[] = "0123456789abcdef";
    unsigned char token[32];
    memset(token, 0xA5, sizeof token);
    for (int byte = 0; byte < 8; byte++) token[31 - byte] = (unsigned char)((unsigned long)index >> (8 * byte));
    char hex[65];
    for (int byte = 0; byte < 32; byte++) {
        hex[2 * byte] = digits[token[byte] >> 4];
        hex[2 * byte + 1] = digits[token[byte] & 0x0F];
    }
    hex[64] = 0;
    snprintf(out, size, "%s/3/device/%s", base_url, hex);
}

// Write coalescing as swift-apns does it (Sources/APNs/Transport/CoalescedWrites.swift): the
// connection is corked (TCP_CORK) while curl_multi_perform runs and flushed every 8th request.
// One connection per loop, so one socket.
typedef struct {
    curl_socket_t socket;
    long requests;
} coalescing;

static void set_cork(curl_socket_t socket, int on) {
#ifdef __linux__
    if (socket != CURL_SOCKET_BAD) setsockopt(socket, IPPROTO_TCP, TCP_CORK, &on, sizeof on);
#else
    (void)socket; (void)on;  // as in swift-apns: coalescing is Linux-only
#endif
}

static curl_socket_t open_socket(void *context, curlsocktype purpose, struct curl_sockaddr *address) {
    (void)purpose;
    coalescing *writes = context;
    writes->socket = socket(address->family, address->socktype, address->protocol);
    return writes->socket;
}

static int before_request(void *context, char *remote_ip, char *local_ip, int remote_port, int local_port) {
    (void)remote_ip;
    (void)local_ip;
    (void)remote_port;
    (void)local_port;
    coalescing *writes = context;
    if (++writes->requests % 8 == 0) {
        set_cork(writes->socket, 0);
        set_cork(writes->socket, 1);
    }
    return CURL_PREREQFUNC_OK;
}

static void coalesced_perform(CURLM *multi, int *running, coalescing *writes) {
    if (!writes) {
        curl_multi_perform(multi, running);
        return;
    }
    writes->requests = 0;
    set_cork(writes->socket, 1);
    curl_multi_perform(multi, running);
    set_cork(writes->socket, 0);
}

// The request headers as a list, without the ones libcurl would add on its own.
static struct curl_slist *header_list(const char *const *headers, int header_count) {
    struct curl_slist *list = NULL;
    for (int index = 0; index < header_count; index++) list = curl_slist_append(list, headers[index]);
    list = curl_slist_append(list, "Accept:");
    list = curl_slist_append(list, "Content-Type:");
    list = curl_slist_append(list, "Expect:");
    return list;
}

// An easy handle for the POST of `body`, configured as swift-apns configures its own.
static CURL *make_easy(const char *ca_path, struct curl_slist *list, const char *body, long body_length, coalescing *writes) {
    CURL *easy = curl_easy_init();
    if (!easy) return NULL;
    curl_easy_setopt(easy, CURLOPT_CAINFO, ca_path);
    curl_easy_setopt(easy, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
    curl_easy_setopt(easy, CURLOPT_PIPEWAIT, 1L);
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, list);
    curl_easy_setopt(easy, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_length);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, discard);
    if (writes) {
        curl_easy_setopt(easy, CURLOPT_OPENSOCKETFUNCTION, open_socket);
        curl_easy_setopt(easy, CURLOPT_OPENSOCKETDATA, writes);
        curl_easy_setopt(easy, CURLOPT_PREREQFUNCTION, before_request);
        curl_easy_setopt(easy, CURLOPT_PREREQDATA, writes);
    }
    return easy;
}

int libcurl_reference_run(const char *base_url, const char *ca_path, const char *const *headers, int header_count,
                          const char *body, long body_length, long count, long warmup, long streams, int coalesce,
                          libcurl_reference_result *result) {
    memset(result, 0, sizeof *result);
    CURLM *multi = curl_multi_init();
    if (!multi) return -1;
    curl_multi_setopt(multi, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
    curl_multi_setopt(multi, CURLMOPT_MAX_HOST_CONNECTIONS, 1L);
    curl_multi_setopt(multi, CURLMOPT_MAX_CONCURRENT_STREAMS, streams);
    struct curl_slist *list = header_list(headers, header_count);
    coalescing coalesced = {CURL_SOCKET_BAD, 0};
    coalescing *writes = coalesce ? &coalesced : NULL;

    long total = count + warmup, started = 0, done = 0;
    double cpu_start = cpu_seconds(), wall_start = now_seconds();
    char url[512];
    CURL **handles = calloc((size_t)streams, sizeof(CURL *));
    if (!handles) return -1;
    for (long index = 0; index < streams && index < total; index++) {
        CURL *easy = make_easy(ca_path, list, body, body_length, writes);
        handles[index] = easy;
        device_url(url, sizeof url, base_url, started);
        curl_easy_setopt(easy, CURLOPT_URL, url);
        curl_multi_add_handle(multi, easy);
        started++;
    }
    int running = 0;
    while (done < total) {
        coalesced_perform(multi, &running, writes);
        CURLMsg *message;
        int left;
        while ((message = curl_multi_info_read(multi, &left))) {
            if (message->msg != CURLMSG_DONE) continue;
            CURL *easy = message->easy_handle;
            long status = 0, connects = 0;
            curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
            curl_easy_getinfo(easy, CURLINFO_NUM_CONNECTS, &connects);
            result->connects += connects;
            if (message->data.result == CURLE_OK && status == 200) result->succeeded++; else result->failed++;
            done++;
            if (done == warmup) {
                cpu_start = cpu_seconds();
                wall_start = now_seconds();
            }
            curl_multi_remove_handle(multi, easy);
            if (started < total) {
                device_url(url, sizeof url, base_url, started);
                curl_easy_setopt(easy, CURLOPT_URL, url);
                curl_multi_add_handle(multi, easy);
                started++;
            }
        }
        if (done < total) curl_multi_poll(multi, NULL, 0, 1000, NULL);
    }
    result->cpu_seconds = cpu_seconds() - cpu_start;
    result->seconds = now_seconds() - wall_start;
    for (long index = 0; index < streams && index < total; index++) curl_easy_cleanup(handles[index]);
    free(handles);
    curl_slist_free_all(list);
    curl_multi_cleanup(multi);
    return 0;
}

int libcurl_reference_sequential(const char *base_url, const char *ca_path, const char *const *headers, int header_count,
                                 const char *body, long body_length, long count, long warmup, double *latencies,
                                 libcurl_reference_result *result) {
    memset(result, 0, sizeof *result);
    CURLM *multi = curl_multi_init();
    if (!multi) return -1;
    curl_multi_setopt(multi, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
    curl_multi_setopt(multi, CURLMOPT_MAX_HOST_CONNECTIONS, 1L);
    struct curl_slist *list = header_list(headers, header_count);
    CURL *easy = make_easy(ca_path, list, body, body_length, NULL);
    if (!easy) return -1;
    char url[512];
    double cpu_start = cpu_seconds(), wall_start = now_seconds();
    for (long index = 0; index < count + warmup; index++) {
        if (index == warmup) {
            cpu_start = cpu_seconds();
            wall_start = now_seconds();
        }
        device_url(url, sizeof url, base_url, index);
        curl_easy_setopt(easy, CURLOPT_URL, url);
        double started = now_seconds();
        curl_multi_add_handle(multi, easy);
        int running = 1;
        CURLMsg *message = NULL;
        while (!message) {
            curl_multi_perform(multi, &running);
            int left;
            while ((message = curl_multi_info_read(multi, &left)) && message->msg != CURLMSG_DONE) {}
            if (!message) curl_multi_poll(multi, NULL, 0, 1000, NULL);
        }
        long status = 0, connects = 0;
        curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
        curl_easy_getinfo(easy, CURLINFO_NUM_CONNECTS, &connects);
        result->connects += connects;
        if (message->data.result == CURLE_OK && status == 200) result->succeeded++; else result->failed++;
        curl_multi_remove_handle(multi, easy);
        if (index >= warmup) latencies[index - warmup] = now_seconds() - started;
    }
    result->cpu_seconds = cpu_seconds() - cpu_start;
    result->seconds = now_seconds() - wall_start;
    curl_easy_cleanup(easy);
    curl_slist_free_all(list);
    curl_multi_cleanup(multi);
    return 0;
}

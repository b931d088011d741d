// Typed wrappers for libcurl's variadic functions, which Swift cannot call directly.
// Each wrapper fixes the type of the last argument; nothing else happens here.
#ifndef CCURL_SHIM_H
#define CCURL_SHIM_H

#include <curl/curl.h>
#include <openssl/ssl.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#ifdef __linux__
#include <sys/prctl.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#else
#include <pthread.h>
#endif
#include <netinet/in.h>
#include <netinet/tcp.h>

typedef size_t (*ccurl_data_callback)(char *ptr, size_t size, size_t nmemb, void *userdata);

static inline CURLcode ccurl_easy_setopt_long(CURL *easy, CURLoption option, long value) {
    return curl_easy_setopt(easy, option, value);
}
static inline CURLSHcode ccurl_share_setopt_long(CURLSH *share, CURLSHoption option, long value) {
    return curl_share_setopt(share, option, value);
}
static inline CURLcode ccurl_easy_setopt_string(CURL *easy, CURLoption option, const char *value) {
    return curl_easy_setopt(easy, option, value);
}
static inline CURLcode ccurl_easy_setopt_pointer(CURL *easy, CURLoption option, void *value) {
    return curl_easy_setopt(easy, option, value);
}
static inline CURLcode ccurl_easy_setopt_off_t(CURL *easy, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(easy, option, value);
}
static inline CURLcode ccurl_easy_setopt_slist(CURL *easy, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(easy, option, value);
}
/// `CURLOPT_*_BLOB`: libcurl copies the bytes (CURL_BLOB_COPY), so the caller may free them afterwards.
static inline CURLcode ccurl_easy_setopt_blob(CURL *easy, CURLoption option, const void *data, size_t length) {
    struct curl_blob blob;
    blob.data = (void *)data;
    blob.len = length;
    blob.flags = CURL_BLOB_COPY;
    return curl_easy_setopt(easy, option, &blob);
}
static inline CURLcode ccurl_easy_setopt_callback(CURL *easy, CURLoption option, ccurl_data_callback callback) {
    return curl_easy_setopt(easy, option, callback);
}
/// `CURLOPT_PREREQFUNCTION` (libcurl 7.80): called when a request is about to be sent on a connection.
static inline CURLcode ccurl_easy_setopt_prereq(CURL *easy, curl_prereq_callback callback) {
    return curl_easy_setopt(easy, CURLOPT_PREREQFUNCTION, callback);
}
static inline CURLcode ccurl_easy_setopt_opensocket(CURL *easy, curl_opensocket_callback callback) {
    return curl_easy_setopt(easy, CURLOPT_OPENSOCKETFUNCTION, callback);
}
static inline CURLcode ccurl_easy_setopt_closesocket(CURL *easy, curl_closesocket_callback callback) {
    return curl_easy_setopt(easy, CURLOPT_CLOSESOCKETFUNCTION, callback);
}
/// `CURLOPT_DEBUGFUNCTION`: with `CURLOPT_VERBOSE`, libcurl's informational lines (the only place
/// libcurl 7.88 reports a received GOAWAY).
static inline CURLcode ccurl_easy_setopt_debug(CURL *easy, curl_debug_callback callback) {
    return curl_easy_setopt(easy, CURLOPT_DEBUGFUNCTION, callback);
}
static inline CURLcode ccurl_easy_getinfo_long(CURL *easy, CURLINFO info, long *value) {
    return curl_easy_getinfo(easy, info, value);
}
static inline CURLcode ccurl_easy_getinfo_pointer(CURL *easy, CURLINFO info, void **value) {
    return curl_easy_getinfo(easy, info, value);
}
static inline CURLMcode ccurl_multi_setopt_long(CURLM *multi, CURLMoption option, long value) {
    return curl_multi_setopt(multi, option, value);
}
static inline CURLMcode ccurl_multi_setopt_pointer(CURLM *multi, CURLMoption option, void *value) {
    return curl_multi_setopt(multi, option, value);
}
/// `CURLMOPT_SOCKETFUNCTION`: which sockets libcurl waits on, and for what.
static inline CURLMcode ccurl_multi_setopt_socket(CURLM *multi, curl_socket_callback callback) {
    return curl_multi_setopt(multi, CURLMOPT_SOCKETFUNCTION, callback);
}
/// Runs every transfer, as `curl_multi_perform` does, and tells the socket callback what each now
/// waits for (deprecated for everyday use, which is why it is wrapped; this module is a system
/// module, so the warning stays here).
static inline CURLMcode ccurl_multi_socket_all(CURLM *multi, int *running) {
    return curl_multi_socket_all(multi, running);
}
/// `CURLMOPT_TIMERFUNCTION`: when libcurl next wants to run what is due.
static inline CURLMcode ccurl_multi_setopt_timer(CURLM *multi, curl_multi_timer_callback callback) {
    return curl_multi_setopt(multi, CURLMOPT_TIMERFUNCTION, callback);
}
static inline CURLcode ccurl_easy_getinfo_off_t(CURL *easy, CURLINFO info, curl_off_t *value) {
    return curl_easy_getinfo(easy, info, value);
}

/// Sets `TCP_CORK` on a socket (`on` = 1: hold partial segments back) or clears it (`on` = 0:
/// send what was held). Returns setsockopt's result: 0, or -1 with errno set. Linux only: Darwin's
/// nearest option, `TCP_NOPUSH`, does not send what it held when it is cleared (only the next
/// write does), which would hold a lone request back; there it returns -1 and writes go out as
/// libcurl makes them.
static inline int ccurl_set_tcp_cork(int socket, int on) {
#ifdef __linux__
    return setsockopt(socket, IPPROTO_TCP, TCP_CORK, &on, sizeof on);
#else
    (void)socket; (void)on;
    return -1;
#endif
}

/// What the loaded libcurl is (`CURLVERSION_NOW` is a macro Swift cannot import).
static inline curl_version_info_data *ccurl_version_info(void) {
    return curl_version_info(CURLVERSION_NOW);
}

/// Whether the TLS connection `easy` is about to use negotiated HTTP/2 by ALPN: 1 for "h2", 0 for
/// another protocol or none, -1 when it cannot tell (no OpenSSL session). Call it from the
/// pre-request callback, while the transfer has its connection.
static inline int ccurl_negotiated_h2(CURL *easy) {
    struct curl_tlssessioninfo *info = NULL;
    if (curl_easy_getinfo(easy, CURLINFO_TLS_SSL_PTR, &info) != CURLE_OK || info == NULL
        || info->backend != CURLSSLBACKEND_OPENSSL || info->internals == NULL) {
        return -1;
    }
    const unsigned char *protocol = NULL;
    unsigned int length = 0;
    SSL_get0_alpn_selected((SSL *)info->internals, &protocol, &length);
    return (length == 2 && protocol[0] == 'h' && protocol[1] == '2') ? 1 : 0;
}

// Names the calling thread as the kernel shows it (top -H, perf, /proc/<pid>/task/*/comm on
// Linux; the debugger and sample on Darwin): at most 15 bytes. prctl is variadic too.
static inline int ccurl_name_current_thread(const char *name) {
#ifdef __linux__
    return prctl(PR_SET_NAME, (unsigned long)name, 0UL, 0UL, 0UL);
#elif defined(__APPLE__)
    return pthread_setname_np(name);
#else
    (void)name;
    return 0;
#endif
}

// Hands the process's freed heap memory back to the system (glibc's malloc_trim(0): the top of
// each arena and the free pages inside it), for `TransportConfiguration.memoryTrimInterval`.
// Returns 1 when memory was released, 0 when none was, -1 where the C library has no such call
// (macOS, musl): there the setting does nothing.
static inline int ccurl_trim_heap(void) {
#if defined(__linux__) && defined(__GLIBC__)
    return malloc_trim(0);
#else
    return -1;
#endif
}

#endif

// A minimal libcurl multi loop in C: the floor that any libcurl-based client pays for the same
// requests. The benchmark runs it against the same server as swift-apns and h2load.
#ifndef LIBCURL_REFERENCE_H
#define LIBCURL_REFERENCE_H

typedef struct {
    double seconds;      // wall time of the measured requests
    double cpu_seconds;  // user + system CPU of the process over the same span
    long succeeded;      // responses with status 200, measured and warm-up
    long failed;
    long connects;       // connections libcurl opened
} libcurl_reference_result;

/// Sends `warmup + count` POSTs of `body` over one HTTP/2 connection with `streams` in flight, each
/// to `base_url` + "/3/device/" + the hex token of device i (32 bytes of 0xA5 with i, big-endian,
/// in the last 8), with `headers` ("name: value"). With `coalesce` non-zero, the connection is
/// corked while curl_multi_perform runs and flushed every 8th request, as swift-apns does. Returns
/// 0, or -1 if libcurl could not start.
int libcurl_reference_run(const char *base_url, const char *ca_path, const char *const *headers, int header_count,
                          const char *body, long body_length, long count, long warmup, long streams, int coalesce,
                          libcurl_reference_result *result);

/// The same requests one at a time (`warmup + count` of them, each started when the previous one
/// finished) through the same multi loop, on one connection; the latency of each measured
/// request, from adding its handle until libcurl reports it done, goes to `latencies[0..<count]`,
/// in seconds. Returns 0, or -1 if libcurl could not start.
int libcurl_reference_sequential(const char *base_url, const char *ca_path, const char *const *headers, int header_count,
                                 const char *body, long body_length, long count, long warmup, double *latencies,
                                 libcurl_reference_result *result);

#endif

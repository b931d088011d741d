internal import CCurl

/// What the libcurl this process loaded can do, checked once, before the first connector uses it.
///
/// The transport rests on options that older libcurls do not have, and would silently lose a
/// guarantee without them (an unknown option is refused, and nothing else happens):
///
/// | option or call | since | what rests on it |
/// |---|---|---|
/// | `CURLOPT_PREREQFUNCTION` | 7.80.0 | the `notSent` / `unknown` split (``Transfer``) |
/// | `CURLOPT_CAINFO_BLOB`, `CURLOPT_PROXY_CAINFO_BLOB` | 7.77.0 | trusting one CA from memory (APNs', an HTTPS proxy's) |
/// | `CURLOPT_SSLCERT_BLOB`, `CURLOPT_SSLKEY_BLOB` | 7.71.0 | certificate connectors |
/// | `CURLMOPT_MAX_CONCURRENT_STREAMS` | 7.67.0 | the stream limit |
/// | `CURLOPT_MAXAGE_CONN` | 7.65.0 | keeping idle connections |
/// | `CURLOPT_UPLOAD_BUFFERSIZE` | 7.62.0 | a smaller upload buffer for each reused handle |
///
/// So the minimum is 7.80.0, with HTTP/2 (`CURL_VERSION_HTTP2`, libcurl built with nghttp2).
///
/// Three behaviours came later, all with 7.88.0's rework of connections and HTTP/2 (checked on
/// Ubuntu 22.04's 7.81.0 and on 7.80–7.87 built from their tags):
/// - Keep-warm (``keepsAConnectionNothingWasWrittenOn``). Before, a transfer stopped at the
///   pre-request callback on a new connection ends "premature" while the connection is not yet
///   marked HTTP/2 (that happens when the request is written), and `multi_done` closes it
///   ("Closing connection 0", where 7.88 leaves it "intact"). There a connector keeps no
///   connection warm, and its first send connects.
/// - The GOAWAY watch (``reportsGoAway``): 7.88 writes "recveived GOAWAY, error=…, last_stream=…"
///   on its verbose channel; older ones only mark the connection for closing, silently. There
///   the transport does not turn the verbose channel on; new connections are still counted.
/// - HTTP/2 through an HTTPS proxy (``carriesHTTP2ThroughAnHTTPSProxy``): libcurl's known bug
///   17.5, "HTTP/2 connections through HTTPS proxy frequently stall" (curl issue 6936), dropped
///   from its list with 7.88's connection filters. Through stunnel in front of tinyproxy on a
///   busy machine, Ubuntu's 7.81.0 still stalled sends until their timeout, and 7.88.1 did not.
///   There a connector refuses an explicit HTTPS proxy.
///
/// HTTP/2 PING on idle connections is not among what any libcurl offers a multi-handle client.
/// Before 8.10, `curl_easy_upkeep` reaches only the easy interface's connections. From 8.10 it
/// reaches the multi handle's pool, and its HTTP/2 filter submits a PING — but
/// `http2_send_ping` (lib/http2.c, 8.10.0 to 8.21.0) only runs `nghttp2_session_send`, whose
/// send callback appends the frame to the connection's output buffer (`Curl_bufq_write_pass`
/// writes only once the 16 KiB buffer is full); the buffer is flushed by `nw_out_flush`, which
/// runs when a transfer on the connection makes progress. Measured with 8.14.1 against the mock
/// server: no byte leaves an idle connection after upkeep (strace), and the server counts the
/// PING only when the next request goes out. So the transport keeps idle connections with TCP
/// keepalive, the idle-socket watch and keep-warm on every libcurl.
///
/// Memory differs by version: before 8.7 every easy handle keeps its own download buffer (7.88 an
/// upload buffer too) while other transfers share its connection; from 8.7 a multi handle lends
/// its transfers one of each (`Curl_multi_xfer_buf_borrow`). What that does to a long-running
/// process's resident memory is for the Reliability article to say (its paragraph on the soak).
///
/// Thread safety: a value type; ``loaded`` is computed once, by whichever thread asks first.
struct Libcurl: Sendable, Equatable {
    /// A libcurl version as `curl_version_info` gives it: `0xXXYYZZ` for X.Y.Z.
    struct Version: Sendable, Comparable, CustomStringConvertible {
        var number: UInt32

        init(_ major: UInt32, _ minor: UInt32, _ patch: UInt32) {
            number = major << 16 | minor << 8 | patch
        }

        init(number: UInt32) { self.number = number }

        static func < (a: Version, b: Version) -> Bool { a.number < b.number }

        var description: String { "\(number >> 16).\(number >> 8 & 0xff).\(number & 0xff)" }
    }

    /// The oldest libcurl the transport can keep its promises with.
    static let minimum = Version(7, 80, 0)
    /// 7.88.0, the first libcurl with "connection filters" (its rework of connections and
    /// HTTP/2), and so with keep-warm (``keepsAConnectionNothingWasWrittenOn``), the GOAWAY watch
    /// (``reportsGoAway``) and HTTPS proxies (``carriesHTTP2ThroughAnHTTPSProxy``).
    static let connectionFilters = Version(7, 88, 0)
    let version: Version

    /// Whether a new connection stays open for later transfers when the transfer that opened it
    /// stops at the pre-request callback, before writing anything: what keep-warm rests on
    /// (7.88.0 and later; older libcurls close it).
    var keepsAConnectionNothingWasWrittenOn: Bool { version >= Libcurl.connectionFilters }

    /// Whether libcurl reports a GOAWAY it receives, with its error code and last stream id, on
    /// its verbose channel (7.88.0 and later).
    var reportsGoAway: Bool { version >= Libcurl.connectionFilters }

    /// Whether HTTP/2 to APNs through an HTTPS proxy works without stalling (7.88.0 and later).
    var carriesHTTP2ThroughAnHTTPSProxy: Bool { version >= Libcurl.connectionFilters }

    /// Checks a libcurl by its version number and feature bits (`curl_version_info_data`'s
    /// `version_num` and `features`). Throws an ``TransportError/Kind-swift.struct/unsupportedLibcurl``
    /// error, with delivery `.notSent`, that names the version found, the version needed and what
    /// to install.
    init(versionNumber: UInt32, features: Int32) throws(TransportError) {
        version = Version(number: versionNumber)
        guard version >= Libcurl.minimum else {
            throw TransportError(
                kind: .unsupportedLibcurl, delivery: .notSent,
                message: "libcurl \(version) is too old: swift-apns needs libcurl \(Libcurl.minimum) or later "
                    + "(CURLOPT_PREREQFUNCTION, which tells a notification that was never written from one that may "
                    + "have been delivered, came in 7.80.0). \(Libcurl.installAdvice)")
        }
        guard features & Int32(CURL_VERSION_HTTP2) != 0 else {
            throw TransportError(
                kind: .unsupportedLibcurl, delivery: .notSent,
                message:
                    "libcurl \(version) was built without HTTP/2 (nghttp2), which APNs requires. \(Libcurl.installAdvice)"
            )
        }
    }

    static let installAdvice =
        "Install a libcurl with HTTP/2 and OpenSSL: on Debian 12 or Ubuntu 22.04 and later `apt-get install "
        + "libcurl4-openssl-dev`; on RHEL and Amazon Linux `dnf install libcurl-devel` (RHEL 9's 7.76 is too old: "
        + "build against a newer libcurl); on macOS `brew install curl` (see Getting Started). "
        + "`curl --version` shows the libcurl a machine has."

    /// The libcurl this process loaded, checked (once).
    static let loaded: Result<Libcurl, TransportError> = {
        guard let info = ccurl_version_info() else {
            return .failure(
                TransportError(
                    kind: .unsupportedLibcurl, delivery: .notSent,
                    message: "curl_version_info returned nothing. \(installAdvice)"))
        }
        do throws(TransportError) {
            return .success(try Libcurl(versionNumber: info.pointee.version_num, features: info.pointee.features))
        } catch {
            return .failure(error)
        }
    }()
}

/// A `curl_easy_setopt` or `curl_multi_setopt` that libcurl refused, named.
///
/// Options whose loss would void a guarantee (the pre-request callback, timeouts, TLS
/// verification, trusted CA and client identity, stream and connection limits) are checked where
/// they are set; a refusal fails what needed the option, before anything is written.
struct RefusedOption: Error {
    var option: StaticString
    var code: Int32
    var meaning: String

    var error: TransportError {
        TransportError(
            kind: .unsupportedLibcurl, delivery: .notSent, curlCode: Int(code),
            message: "libcurl refused \(option) (\(meaning)); nothing was written. \(Libcurl.installAdvice)")
    }
}

/// Throws ``RefusedOption`` when `code` is not `CURLE_OK`.
@inline(__always)
func require(_ code: CURLcode, _ option: StaticString) throws(RefusedOption) {
    guard code == CURLE_OK else {
        throw RefusedOption(
            option: option, code: Int32(code.rawValue), meaning: String(cString: curl_easy_strerror(code)))
    }
}

/// Throws ``RefusedOption`` when `code` is not `CURLSHE_OK`.
func require(_ code: CURLSHcode, _ option: StaticString) throws(RefusedOption) {
    guard code == CURLSHE_OK else {
        throw RefusedOption(
            option: option, code: Int32(code.rawValue), meaning: String(cString: curl_share_strerror(code)))
    }
}

/// Throws ``RefusedOption`` when `code` is not `CURLM_OK`.
@inline(__always)
func require(_ code: CURLMcode, _ option: StaticString) throws(RefusedOption) {
    guard code == CURLM_OK else {
        throw RefusedOption(
            option: option, code: Int32(code.rawValue), meaning: String(cString: curl_multi_strerror(code)))
    }
}

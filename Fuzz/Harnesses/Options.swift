// Every value a caller or a flag can pass as a transport setting, a send timeout or a retry policy:
// checking it never traps, what is accepted is exactly what the documented ranges say, and the
// arithmetic the transport does with an accepted value (milliseconds for libcurl, deadlines,
// back-offs, cool-downs) cannot overflow.
@testable import APNs

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOptions(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    var input = FuzzInput(start, count)
    let day = TransportConfiguration.maximumDuration

    // Any Duration a caller can make, edge values often.
    func duration() -> Duration {
        let edges: [Duration] = [
            .zero, .nanoseconds(1), .nanoseconds(-1), .milliseconds(1), .seconds(1), day, day + .nanoseconds(1),
            .seconds(Int64.max), .seconds(Int64.min), .seconds(1e16), .milliseconds(Int64.max),
        ]
        switch input.byte() % 4 {
        case 0: return edges[Int(input.byte()) % edges.count]
        case 1:
            let seconds = input.double()
            guard seconds.isFinite, abs(seconds) < 9e18 else { return .zero }
            return .seconds(seconds)
        case 2: return .nanoseconds(input.int64())
        default:
            let attoseconds = input.int64() % 1_000_000_000_000_000_000
            return Duration(secondsComponent: input.int64() % 200_000, attosecondsComponent: attoseconds)
        }
    }
    func int() -> Int {
        let edges = [0, 1, -1, 1_000, 1_001, Int(Int32.max), Int(Int32.max) + 1, .max, .min]
        return input.byte() % 2 == 0 ? edges[Int(input.byte()) % edges.count] : Int(input.int64())
    }
    func inRange(_ value: Duration, from lowest: Duration) -> Bool { value >= lowest && value > .zero && value <= day }

    // The derived numbers of an accepted duration: whole milliseconds for libcurl (never 0, which
    // is "no timeout"), a deadline from now, and the transport's slack beyond it.
    func derive(_ value: Duration) {
        let milliseconds = value.millisecondsRoundedUp
        if value > .zero, milliseconds < 1 || milliseconds > 86_400_000 { violated("\(value) → \(milliseconds) ms") }
        if Duration.milliseconds(milliseconds) < value { violated("\(value) rounded down to \(milliseconds) ms") }
        let deadline = ContinuousClock.now + value + .seconds(1)
        _ = Int32(clamping: (deadline - .now).millisecondsRoundedUp)
    }

    // 1. A transport configuration.
    var configuration = TransportConfiguration(
        requestTimeout: duration(), connectTimeout: duration(), maximumConnectionsPerHost: int(),
        maximumConcurrentStreams: int(), maximumIdleTime: duration(),
        tcpKeepAliveInterval: input.byte() % 2 == 0 ? nil : duration(), shutdownGracePeriod: duration())
    if input.byte() % 2 == 1 { configuration.memoryTrimInterval = duration() }
    if input.byte() % 2 == 1 {
        configuration.circuitBreaker = CircuitBreakerPolicy(
            failureThreshold: int(), initialCoolDown: duration(), maximumCoolDown: duration())
    }
    let expected =
        inRange(configuration.requestTimeout, from: .milliseconds(1))
        && inRange(configuration.connectTimeout, from: .milliseconds(1))
        && (1...1_000).contains(configuration.maximumConnectionsPerHost)
        && (1...Int(Int32.max)).contains(configuration.maximumConcurrentStreams)
        && configuration.shutdownGracePeriod >= .zero && configuration.shutdownGracePeriod <= day
        && inRange(configuration.maximumIdleTime, from: .seconds(1))
        && configuration.tcpKeepAliveInterval.map { inRange($0, from: .seconds(1)) } ?? true
        && configuration.memoryTrimInterval.map { inRange($0, from: .seconds(1)) } ?? true
        && configuration.circuitBreaker.map {
            (1...Int(Int32.max)).contains($0.failureThreshold) && inRange($0.initialCoolDown, from: .milliseconds(1))
                && inRange($0.maximumCoolDown, from: $0.initialCoolDown)
        } ?? true
    let accepted = (try? configuration.validate()) != nil
    if accepted != expected { violated("\(configuration): accepted \(accepted), documented \(expected)") }
    if accepted {
        for value in [configuration.requestTimeout, configuration.connectTimeout, configuration.maximumIdleTime] {
            derive(value)
        }
        _ = Int(configuration.maximumIdleTime.components.seconds) + 2
        if let interval = configuration.memoryTrimInterval { _ = ContinuousClock.now + interval }  // its next due time
        if let breakerPolicy = configuration.circuitBreaker {
            // A circuit opened and its probes failing, as far as the cool-down can double.
            let breaker = CircuitBreaker(policy: breakerPolicy)  // a class: its record changes it
            var now = ContinuousClock.now
            for _ in 0..<min(breakerPolicy.failureThreshold, 40) {
                breaker.record(.failing("fuzz"), probe: false, now: now)
            }
            for _ in 0..<40 {
                guard let coolDown = breaker.coolDown else { break }
                if coolDown > breakerPolicy.maximumCoolDown * 1.2 + .nanoseconds(1) {
                    violated("cool-down \(coolDown)")
                }
                now = now + coolDown
                _ = breaker.admit(now: now)
                breaker.record(.failing("fuzz"), probe: true, now: now)
            }
        }
    }

    // 2. A send's own timeout.
    let timeout = duration()
    let timeoutAccepted = (try? TransportConfiguration.validate(sendTimeout: timeout)) != nil
    if timeoutAccepted != (timeout > .zero && timeout <= day) {
        violated("send timeout \(timeout): \(timeoutAccepted)")
    }
    if timeoutAccepted { derive(timeout) }
    _ = timeout.millisecondsRoundedUp  // any value: saturates, never traps

    // 3. A retry policy, and the back-off before any attempt.
    let jitter = input.byte() % 2 == 0 ? Double(input.byte()) / 200 : input.double()
    let retry = RetryPolicy(
        maximumAttempts: int(), initialBackoff: duration(), maximumBackoff: duration(), jitter: jitter)
    if (try? retry.validate()) != nil {
        let retryAfter = input.byte() % 2 == 0 ? nil : Optional(Duration.seconds(Int64(input.byte()) * 600))
        let errors: [APNsError] = [
            .transport(TransportError(kind: .timeout, delivery: .notSent, message: "fuzz")),
            .rejected(APNsRejection(status: 503, reason: .serviceUnavailable, retryAfter: retryAfter)),
        ]
        for attempt in [1, 2, 3, 30, 63, 64, 65, int()] {
            for error in errors {
                guard let delay = retry.delay(after: error, attempt: attempt) else { continue }
                let ceiling = max(retry.maximumBackoff * (1 + retry.jitter), retryAfter ?? .zero) + .nanoseconds(1)
                if delay < .zero || delay > ceiling { violated("back-off \(delay) for attempt \(attempt) of \(retry)") }
                _ = ContinuousClock.now + delay
            }
        }
    }

    // 4. A proxy as an operator writes it (`--proxy`, a configuration file): parsing never traps;
    // an accepted one validates, shows no password, and its libcurl form parses back to itself.
    let pieces = [
        "http://", "https://", "socks5://", "socks5h://", "ftp://", "u:p@", "%41%zz@", "[::1]", ":3128",
        ":0", ":65536", "@", "/", "direct", "environment", "\u{0}",
    ]
    var text = ""
    for _ in 0..<Int(input.byte() % 6) {
        text += input.byte() % 2 == 0 ? pieces[Int(input.byte()) % pieces.count] : input.string(limit: 12)
    }
    if let proxy = try? Proxy(setting: text) {
        if (try? proxy.validate()) == nil { violated("proxy \(proxy) accepted but invalid") }
        if case .explicit(let endpoint) = proxy.route {
            if let password = endpoint.credentials?.password, password.count >= 3,
                proxy.description.contains(password), !endpoint.host.contains(password),
                !(endpoint.credentials?.username.contains(password) ?? false), !"\(endpoint.port)".contains(password),
                !endpoint.scheme.rawValue.contains(password)
            {
                violated("proxy description shows its password: \(proxy)")
            }
            guard let again = try? Proxy(url: endpoint.curlURL), case .explicit(let back) = again.route,
                back.scheme == endpoint.scheme, back.host == endpoint.host, back.port == endpoint.port
            else {
                violated("proxy \(proxy): libcurl form \(endpoint.curlURL) does not parse back")
            }
        }
    }
    return 0
}

import Instrumentation
import ServiceContextModule
import Tracing

/// A notification's trace context as the queue keeps it: the W3C `traceparent` of the span that
/// accepted it, written by the bootstrapped instrument (swift-otel's W3C propagator, when the
/// gateway exports traces) and read back by whichever instance sends it, so that its sends, and
/// the library's spans under them, are children of the `POST` that accepted it.
enum TraceParent {
    /// The `traceparent` of `context` (the current span's), or nil when no instrument writes one
    /// (tracing off).
    static func of(_ context: ServiceContext?) -> String? {
        guard let context else { return nil }
        var carrier: [String: String] = [:]
        InstrumentationSystem.instrument.inject(context, into: &carrier, using: Carrier())
        return carrier["traceparent"]
    }

    /// A context whose span is the one `traceParent` names, for a child of it.
    static func context(_ traceParent: String) -> ServiceContext {
        var context = ServiceContext.topLevel
        InstrumentationSystem.instrument.extract(["traceparent": traceParent], into: &context, using: Carrier())
        return context
    }

    struct Carrier: Injector, Extractor {
        func inject(_ value: String, forKey key: String, into carrier: inout [String: String]) { carrier[key] = value }
        func extract(key: String, from carrier: [String: String]) -> String? { carrier[key] }
    }
}

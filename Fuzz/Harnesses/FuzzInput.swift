/// Turns a fuzzer's bytes into values, deterministically, consuming from the front.
/// Shared by every harness (compiled into each).
struct FuzzInput {
    private let bytes: [UInt8]
    private var index = 0

    init(_ start: UnsafeRawPointer, _ count: Int) {
        bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    }

    var isEmpty: Bool { index >= bytes.count }

    mutating func byte() -> UInt8 {
        guard index < bytes.count else { return 0 }
        defer { index += 1 }
        return bytes[index]
    }

    mutating func int64() -> Int64 {
        var value: UInt64 = 0
        for _ in 0..<8 { value = value << 8 | UInt64(byte()) }
        return Int64(bitPattern: value)
    }

    mutating func double() -> Double { Double(bitPattern: UInt64(bitPattern: int64())) }

    /// Up to `limit` raw bytes (length from the input).
    mutating func chunk(limit: Int = 64) -> [UInt8] {
        let length = min(Int(byte()) % (limit + 1), bytes.count - index)
        guard length > 0 else { return [] }
        defer { index += length }
        return Array(bytes[index..<index + length])
    }

    /// Arbitrary bytes as a String (invalid UTF-8 becomes U+FFFD, as when reading a network).
    mutating func string(limit: Int = 64) -> String { String(decoding: chunk(limit: limit), as: UTF8.self) }

    /// The rest of the input.
    mutating func rest() -> [UInt8] {
        defer { index = bytes.count }
        return index < bytes.count ? Array(bytes[index...]) : []
    }
}

/// Stops the run with a message libFuzzer records as a crash (the harness found a bug).
func violated(_ message: String) -> Never {
    fatalError("fuzz invariant violated: \(message)")
}

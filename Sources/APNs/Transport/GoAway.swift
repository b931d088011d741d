/// A GOAWAY frame as libcurl's informational line describes it.
struct GoAway: Equatable {
    var errorCode: UInt32
    var lastStreamID: UInt32

    /// Parses `r[e]c[v]eived GOAWAY, error=N, last_stream=M`; nil for any other line.
    init?(_ line: UnsafeRawBufferPointer) {
        let goaway = Array("GOAWAY, error=".utf8)
        guard line.count < 256, let start = GoAway.find(goaway, in: line, from: 0), start <= 12 else { return nil }
        guard let (error, afterError) = GoAway.number(in: line, from: start + goaway.count) else { return nil }
        let last = Array("last_stream=".utf8)
        guard let lastStart = GoAway.find(last, in: line, from: afterError),
            let (stream, _) = GoAway.number(in: line, from: lastStart + last.count)
        else { return nil }
        errorCode = error
        lastStreamID = stream
    }

    private static func find(_ needle: [UInt8], in line: UnsafeRawBufferPointer, from start: Int) -> Int? {
        guard line.count >= needle.count, start <= line.count - needle.count else { return nil }
        for index in start...(line.count - needle.count) where line[index] == needle[0] {
            if needle.indices.allSatisfy({ line[index + $0] == needle[$0] }) { return index }
        }
        return nil
    }

    private static func number(in line: UnsafeRawBufferPointer, from start: Int) -> (UInt32, Int)? {
        var value: UInt64 = 0
        var index = start
        while index < line.count, (48...57).contains(line[index]), value <= UInt64(UInt32.max) {
            value = value * 10 + UInt64(line[index] - 48)
            index += 1
        }
        guard index > start, value <= UInt64(UInt32.max) else { return nil }
        return (UInt32(value), index)
    }
}

extension NotificationDescription {
    /// A rule a ``NotificationDescription`` breaks: the field at fault and what to do, with the
    /// fields it mentions left for the front end to name (`--content-state` on a command line,
    /// `"content-state"` in JSON).
    ///
    /// Thread safety: a value type; `Sendable`.
    public struct Problem: Error, Sendable, Equatable {
        /// A part of the alert, for a problem with one part of ``NotificationField/alert``.
        public enum AlertPart: String, Sendable {
            case title, subtitle, body
            case launchImage = "launch-image"
        }

        /// How the message reads.
        public enum Form: Sendable, Equatable {
            /// It follows the field's name: "is missing; …", "belongs to the end event".
            case predicate
            /// It stands alone and names any field it needs.
            case sentence
        }

        /// The field at fault.
        public let field: NotificationField
        /// The part of the alert at fault, when the field is ``NotificationField/alert``.
        public let part: AlertPart?
        /// How ``message(naming:)`` reads.
        public let form: Form
        let text: Text

        init(_ field: NotificationField, part: AlertPart? = nil, _ predicate: Text) {
            self.field = field
            self.part = part
            self.form = .predicate
            self.text = predicate
        }

        init(_ field: NotificationField, part: AlertPart? = nil, sentence: Text) {
            self.field = field
            self.part = part
            self.form = .sentence
            self.text = sentence
        }

        /// The message, each field it mentions named by `name`.
        public func message(naming name: (NotificationField) -> String) -> String {
            text.parts.map { part in
                switch part {
                case .literal(let text): text
                case .field(let field): name(field)
                }
            }.joined()
        }

        /// A message whose fields are named later.
        struct Text: ExpressibleByStringInterpolation, Sendable, Equatable {
            enum Part: Sendable, Equatable {
                case literal(String)
                case field(NotificationField)
            }
            var parts: [Part] = []

            init(stringLiteral value: String) { parts = [.literal(value)] }
            init(stringInterpolation: Interpolation) { parts = stringInterpolation.parts }

            struct Interpolation: StringInterpolationProtocol {
                var parts: [Part] = []
                init(literalCapacity: Int, interpolationCount: Int) {}
                mutating func appendLiteral(_ literal: String) { parts.append(.literal(literal)) }
                mutating func appendInterpolation(_ field: NotificationField) { parts.append(.field(field)) }
                mutating func appendInterpolation(_ text: String) { parts.append(.literal(text)) }
                mutating func appendInterpolation(_ number: Int) { parts.append(.literal(String(number))) }
            }
        }
    }
}

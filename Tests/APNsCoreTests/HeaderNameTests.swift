import APNs
import Testing

/// The header names' one owner: their exact spelling, and the builders, responses and tests all
/// reading it.
@Suite struct HeaderNameTests {
    typealias Name = APNsRequest.Header.Name

    @Test func everyNameIsSpelledAsAPNsSendsIt() {
        let names: [Name] = [
            .apnsPushType, .apnsTopic, .apnsPriority, .apnsExpiration, .apnsID, .apnsCollapseID, .apnsUniqueID,
            .apnsChannelID, .apnsRequestID, .authorization, .retryAfter, .contentType,
        ]
        #expect(
            names.map(\.rawValue) == [
                "apns-push-type", "apns-topic", "apns-priority", "apns-expiration", "apns-id", "apns-collapse-id",
                "apns-unique-id", "apns-channel-id", "apns-request-id", "authorization", "retry-after",
                "content-type",
            ])
        #expect(Set(names).count == names.count)
        #expect(Name.apnsTopic.description == "apns-topic")
    }

    @Test func requestsAndResponsesAreReadByName() throws {
        let request = try AlertNotification(
            bundleID: "com.example.app", collapseID: CollapseID("order-42")
        ) { Alert("Shipped") }.request(to: Device(token: "abcd"))
        #expect(request[header: .apnsTopic] == "com.example.app")
        #expect(request[header: .apnsPushType] == "alert")
        #expect(request[header: .apnsPriority] == "10")
        #expect(request[header: .apnsCollapseID] == "order-42")
        #expect(request[header: .apnsID] == nil)
        // Every header a builder writes is one of the names: none is spelled elsewhere.
        let known = Set(
            [Name.apnsPushType, .apnsTopic, .apnsPriority, .apnsExpiration, .apnsID, .apnsCollapseID].map(\.rawValue))
        #expect(request.headers.allSatisfy { known.contains($0.name) }, "\(request.headers)")

        let response = APNsHTTPResponse(
            status: 429, headers: [APNsRequest.Header(.retryAfter, value: "7"), .init(.apnsID, value: "x")])
        #expect(response[header: .retryAfter] == "7")
        #expect(response[header: .apnsID] == "x")
        #expect(APNsRejection(response).retryAfter == .seconds(7))
    }
}

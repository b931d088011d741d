import Testing

/// `apns send --truncate`: the opt-in truncation from the command line.
@Suite struct TruncateFlagTests {
    @Test func dryRunShowsTheTruncatedRequestAndWhatWasCut() async throws {
        let body = String(repeating: "😀", count: 1016) + "éé"  // a 4097-byte payload
        let arguments = ["send", "--dry-run", "--topic", "com.example.app", "--token", "ab", "--body", body]
        let refused = try await CLITests.apns(arguments)
        #expect(refused.status == 2)
        #expect(refused.stderr.hasPrefix("apns: The alert payload is 4097 bytes; APNs accepts at most 4096."))
        let run = try await CLITests.apns(arguments + ["--truncate"])
        #expect(run.status == 0)
        #expect(run.stderr == "apns: truncated to fit 4096 bytes (was 4097): body: removed 2 characters (1 bytes)\n")
        #expect(
            run.stdout == """
                POST /3/device/ab
                apns-push-type: alert
                apns-topic: com.example.app
                apns-priority: 10

                {"aps":{"alert":{"body":"\(String(repeating: "😀", count: 1016))…"}}}

                """)
        let wrongType = try await CLITests.apns([
            "send", "--dry-run", "--push-type", "background", "--topic", "com.example.app", "--token", "ab",
            "--truncate",
        ])
        #expect(wrongType.status == 2)
        #expect(
            wrongType.stderr
                == "apns: --truncate shortens the text of --title/--subtitle/--body on an alert; it does not apply to background\n"
        )
    }
}

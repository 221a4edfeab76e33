// Package fake provides MCP servers for tests and for `mcpgate demo`: an
// honest one built on the go-sdk's own server, and a hostile one whose
// answers a test programs. Both speak Streamable HTTP on 127.0.0.1 only.
//
// # Honest server
//
// [Start] (in tests) or [NewServer] (in the demo) runs a [Server]: the
// go-sdk's mcp.Server behind mcp.NewStreamableHTTPHandler, so sessions,
// the standalone GET stream, list_changed notifications, elicitation and
// cancellation behave as the SDK really does. A thin wrapper in front checks
// credentials ([Options]), counts what it sees ([Server.Requests],
// [Server.Deletes]) and can forget sessions ([Server.ExpireSessions]) or go
// away ([Server.Stop], [Server.Restart]).
//
// Its catalog:
//
//   - tools: echo {text}, add {a, b} (text and structuredContent {"sum"}),
//     slow {seconds} (honours cancellation), fail (isError "the widget is
//     broken"), ask (form elicitation, see [AskMessage]), big {bytes}
//     (lines of 100 'x', see [MaxBigBytes]), progress {steps} (progress
//     notifications), log {text} (a log message at info); with
//     [Options.Tally], tally {key} (counts its executions per key, see
//     [Server.Tally]);
//   - prompts: greet {name, required}, summarize {style, optional};
//   - resources: fake://readme ([ReadmeText]), fake://data.json ([DataJSON]);
//     the template fake://items/{id} ("item <id>").
//
// It speaks 2026-07-28 (statelessly, as the go-sdk serves that generation)
// and the session era, each request in the generation it names, unless
// [Options.Versions] narrows it ([SessionEra]).
//
// A test that cancels a call waits for the call to run first:
//
//	srv := fake.Start(t, nil)
//	// ... start a call of "slow" with ctx ...
//	for srv.InFlight("slow") == 0 { time.Sleep(time.Millisecond) }
//	cancel()
//	// ... later srv.Cancellations() reports ["slow"]
//
// # Hostile server
//
// [StartHostile] runs a [Hostile]: a few hundred lines of hand-written
// Streamable HTTP, valid by default, with hooks per method ([HostileOptions])
// and ready-made payloads that count their hits: [MalformedToolsList],
// [OversizedToolsList], [EndlessCursor], [HugeResult], [HugeResultSSE],
// [Status500] and [DropConnection].
//
//	drop := fake.DropConnection()
//	h := fake.StartHostile(t, fake.HostileOptions{CallTool: drop.Call})
//	// ... call a tool through the code under test, expect "in doubt" ...
//	if drop.Hits() != 1 { t.Error("the call was re-sent") }
//
// # Fault proxy
//
// [StartFaultProxy] puts a [FaultProxy] between a client and any of these
// servers: per request, by a seeded random plan or by a [FaultOptions.Plan]
// of the test's, it adds latency, resets the connection before or after
// the backend saw the request, answers 503 or 429 itself, truncates an
// answer in the middle of an event, sends every event twice, trickles the
// answer, or pads it beyond a client's bound. [FaultProxy.Records] says
// what it did to each request and whether the backend saw it; the honest
// server's tally tool counts executions per key ([Server.Tally]), so a
// test can tell a lost call from one run twice.
//
//	srv := fake.Start(t, &fake.Options{Tally: true})
//	p := fake.StartFaultProxy(t, srv.URL, &fake.FaultOptions{Seed: 1})
//	// ... call tally {key: "k1"} at p.URL through the code under test ...
//	if srv.Tally("k1").Started > 1 { t.Error("the call ran twice") }
//
// # go-sdk behaviour worth knowing
//
// What the go-sdk v1.8.0 client does against these fakes (read in its source,
// and pinned by this package's tests where a fake can show it):
//
//   - it opens the standalone GET stream inside Connect, with a context
//     detached from Connect's: a server that never answers that GET blocks
//     Connect for good (DisableStandaloneSSE avoids it);
//   - a GET stream that ends is reopened with backoff (about a second), and
//     the session fails after MaxRetries reopenings without progress;
//   - a 404 on a session surfaces as mcp.ErrSessionMissing and closes the
//     client session; nothing re-initializes;
//   - 500, 502, 503, 504 and 429 are "transient": the call fails, the
//     session survives and the body is never read; a 401 without an
//     OAuthHandler is just "Unauthorized", without the status as a value;
//   - a dropped connection fails the call and is not retried;
//   - application/json responses are read whole, without a size limit; an
//     SSE event above MaxEventSize (16 MiB) fails the whole session;
//   - list results are passed through unvalidated (only null entries and bad
//     x-mcp-header annotations are dropped), and a decoding error quotes the
//     server's bytes, so its text must not reach a model;
//   - it speaks 2026-07-28 only with a stateless server: the stateful
//     Streamable HTTP handler answers server/discover with no supported
//     version, which is why the fake serves that generation with a stateless
//     handler of its own;
//   - subscriptions/listen is sent once and never re-sent when it breaks;
//     a notification is handled on another goroutine than the response that
//     follows it, so it may be seen after its call returned; the Tool type
//     drops execution.taskSupport.
package fake

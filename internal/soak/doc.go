// Package soak proves the manager and the gateway under load and faults:
// its test sends many tools/call requests through the real
// [manager.Manager] (and the gateway's call action) to a fake server behind
// a [fake.FaultProxy] injecting random faults, in both protocol
// generations, and judges every reported outcome against what the server
// executed (see docs/reliability.md).
//
// The default run is short; MCPGATE_SOAK_CALLS sets the number of calls:
//
//	MCPGATE_SOAK_CALLS=10000 go test -run TestSoak -v ./internal/soak
package soak

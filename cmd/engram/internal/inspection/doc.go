// Package inspection computes what a store holds, for engram inspect and
// the HTTP API's GET /v1/admin/stats: one [Report] (the store's tenants,
// a tenant's users and shared data, or a user's sessions, with counts and
// bytes) and the extraction queue. Both print the same figures because
// both call [Build].
//
// # Caveats
//
//   - Counting reads every record of the scopes shown: slow on a large
//     store.
//   - Disk sizes are the caller's to measure ([Options].Disk): a store
//     open read-write has preallocated memtable files, so engram inspect
//     measures before it opens the store, and a running server measures
//     its files as they are.
package inspection

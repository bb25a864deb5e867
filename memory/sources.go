package memory

// sourceSpec is what recall (recall.go, fusion.go) and the preamble
// (assemble.go) know of one [Source]: where its candidates are read, how
// they rank against others of equal score, and the title of their section.
type sourceSpec struct {
	source Source
	// space is the record space searched for the source's candidates, by
	// vector and BM25, and read to hydrate them; "" for the graph, whose
	// facts are reached by walking it (see graphCandidates), not searched.
	space string
	// owner says whose partition holds the records.
	owner sourceOwner
	// tie ranks the source among candidates of equal fused score
	// (compareCandidates), lowest first.
	tie int
	// title heads the source's section of the preamble.
	title string
	// byDefault says Recall draws on the source when Query.Sources is nil.
	byDefault bool
}

// sourceOwner says whose partition holds a source's records.
type sourceOwner int

const (
	// ownerUser is the partition of the user recalled for.
	ownerUser sourceOwner = iota
	// ownerTenant is the tenant's partition, whose memories every user of
	// the tenant may be given.
	ownerTenant
)

// recallSources describes every source, in the order the preamble shows
// them ([Sources]). The same order is the order in which the searched
// sources' hits are merged, which breaks ties of equal score in the merged
// lists (fusion.addMerged).
//
// Ties between candidates of equal fused score go to what was remembered
// on purpose, then facts, then what was merely said: the first of each
// list scores alike, so ties are common.
var recallSources = [...]sourceSpec{
	{source: SourceMemories, space: spaceMemories, owner: ownerUser, tie: 0, title: "Memories:", byDefault: true},
	{source: SourceShared, space: spaceMemories, owner: ownerTenant, tie: 1, title: "Shared memories:"},
	{source: SourceEpisodes, space: spaceMessages, owner: ownerUser, tie: 3, title: "Earlier messages:", byDefault: true},
	{source: SourceGraph, owner: ownerUser, tie: 2, title: "Facts:", byDefault: true},
}

// spec returns the description of src; the zero sourceSpec for a source
// not in recallSources (Query.normalize refuses those).
func (s Source) spec() *sourceSpec {
	for i := range recallSources {
		if recallSources[i].source == s {
			return &recallSources[i]
		}
	}
	return &sourceSpec{}
}

// searched reports whether the source's candidates come from searching a
// record space (memories, shared memories, episodes) rather than from the
// graph.
func (sp *sourceSpec) searched() bool { return sp.space != "" }

// ownerOf returns the scope whose partition holds a source's records for
// user: the tenant's for shared memories, else the user's.
func ownerOf(src Source, user Scope) Scope {
	if src.spec().owner == ownerTenant {
		return Scope{Tenant: user.Tenant}
	}
	return user
}

// spaceOf returns the record space of a source's candidates.
func spaceOf(src Source) string { return src.spec().space }

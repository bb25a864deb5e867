package memory

import "github.com/engramdb/engram/kv"

type (
	kvTxn         = kv.Txn
	kvIterOptions = kv.IterOptions
)

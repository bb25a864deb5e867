package main

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/engramdb/engram/memory"
)

// privacyFlags are the privacy controls of the long-running commands that
// write what users say (serve and mcp): redaction of personal data before
// storage, and retention by age.
type privacyFlags struct {
	redact    bool
	retention memory.Retention
}

// register adds --redact and the --retain-* flags.
func (f *privacyFlags) register(fs *pflag.FlagSet) {
	fs.BoolVar(&f.redact, "redact", false,
		"replace e-mail addresses, phone, card and national id numbers, IBANs and IP addresses with placeholders ([EMAIL_1]) before anything is stored")
	fs.DurationVar(&f.retention.Messages, "retain-messages", 0,
		"erase messages older than this (e.g. 2160h for 90 days); 0 keeps them until forgotten")
	fs.DurationVar(&f.retention.Episodes, "retain-episodes", 0,
		"stop recalling other sessions' messages, and erase episode memories, older than this; 0 keeps them")
	fs.DurationVar(&f.retention.Memories, "retain-memories", 0,
		"erase memories (other than episodes) older than this; 0 keeps them until forgotten or deleted")
}

// validate reports the flags that are bad, by their names, before any
// file is written (the store's Open checks them again).
func (f *privacyFlags) validate() []error {
	var errs []error
	for _, r := range []struct {
		name string
		d    time.Duration
	}{{"retain-messages", f.retention.Messages}, {"retain-episodes", f.retention.Episodes}, {"retain-memories", f.retention.Memories}} {
		if r.d < 0 {
			errs = append(errs, fmt.Errorf("--%s %s is negative (0 keeps everything)", r.name, r.d))
		}
	}
	return errs
}

// apply sets the options the flags name; the store's Open validates them.
func (f *privacyFlags) apply(o *memory.Options) {
	if f.redact {
		o.Redactor = memory.NewRedactor()
	}
	o.Retention = f.retention
}

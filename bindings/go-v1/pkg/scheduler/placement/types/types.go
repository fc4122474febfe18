// Package types stands in for yunikorn-core's
// pkg/scheduler/placement/types: the names of the placement rules a
// queue configuration's placementrules use (configs.PlacementRule.Name).
package types

// The rule names sicore's placement reads.
const (
	Fixed    = "fixed"
	User     = "user"
	Provided = "provided"
	Tag      = "tag"
	Test     = "test"
	Recovery = "recovery"
)

//go:build !sicore_checkout && !sicore_dynamic

package entrypoint

// linkTags are the build tags this test binary was built with, for the
// program the replace test builds (none: pkg-config).
const linkTags = ""

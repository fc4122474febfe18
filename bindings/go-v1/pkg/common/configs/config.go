// Package configs stands in for yunikorn-core's pkg/common/configs: the Go
// form of the queue configuration (queues.yaml) that tools build and read,
// the k8shim's e2e framework among them. The types have the reference's
// exported names and YAML/JSON field names, so a configuration written
// with them is one the scheduler reads, and one it answers (GET
// /ws/v1/config) reads back into them.
//
// The scheduler itself is sicore: it parses and validates configurations
// in the Rust library. LoadSchedulerConfigFromByteArray here checks the
// YAML shape strictly (unknown keys refused) and the few rules every
// configuration must meet; the full validation is the scheduler's (POST
// /ws/v1/validate-conf, or the RM's registration and updates).
package configs

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"strings"

	"go.yaml.in/yaml/v3"
)

// SchedulerConfig is a whole configuration: its partitions and, when read
// from the scheduler, the checksum of the text in force.
type SchedulerConfig struct {
	Partitions []PartitionConfig
	Checksum   string `yaml:",omitempty" json:",omitempty"`
}

// PartitionConfig is one partition: its queue tree (one root), placement
// rules, user and group limits, preemption switches, node sorting and
// user/group resolution.
type PartitionConfig struct {
	Name              string
	Queues            []QueueConfig
	PlacementRules    []PlacementRule           `yaml:",omitempty" json:",omitempty"`
	Limits            []Limit                   `yaml:",omitempty" json:",omitempty"`
	Preemption        PartitionPreemptionConfig `yaml:",omitempty" json:",omitempty"`
	NodeSortPolicy    NodeSortingPolicy         `yaml:",omitempty" json:",omitempty"`
	UserGroupResolver UserGroupResolver         `yaml:",omitempty" json:",omitempty"`
}

// UserGroupResolver names how users' groups are found.
type UserGroupResolver struct {
	Type string `yaml:"type,omitempty" json:"type,omitempty"`
}

// PartitionPreemptionConfig switches guarantee and quota preemption; nil
// leaves the scheduler's default.
type PartitionPreemptionConfig struct {
	Enabled                *bool `yaml:",omitempty" json:",omitempty"`
	QuotaPreemptionEnabled *bool `yaml:",omitempty" json:",omitempty"`
}

// QueueConfig is one queue and its children.
type QueueConfig struct {
	Name            string
	Parent          bool              `yaml:",omitempty" json:",omitempty"`
	Resources       Resources         `yaml:",omitempty" json:",omitempty"`
	MaxApplications uint64            `yaml:",omitempty" json:",omitempty"`
	Properties      map[string]string `yaml:",omitempty" json:",omitempty"`
	AdminACL        string            `yaml:",omitempty" json:",omitempty"`
	SubmitACL       string            `yaml:",omitempty" json:",omitempty"`
	ChildTemplate   ChildTemplate     `yaml:",omitempty" json:",omitempty"`
	Queues          []QueueConfig     `yaml:",omitempty" json:",omitempty"`
	Limits          []Limit           `yaml:",omitempty" json:",omitempty"`
}

// ChildTemplate is what a dynamic child queue of a parent gets.
type ChildTemplate struct {
	MaxApplications uint64            `yaml:",omitempty" json:",omitempty"`
	Properties      map[string]string `yaml:",omitempty" json:",omitempty"`
	Resources       Resources         `yaml:",omitempty" json:",omitempty"`
}

// Resources are a queue's guaranteed and maximum quantities, by resource
// name, as written in the configuration ("2G", "500m", "10").
type Resources struct {
	Guaranteed map[string]string `yaml:",omitempty" json:",omitempty"`
	Max        map[string]string `yaml:",omitempty" json:",omitempty"`
}

// PlacementRule is one rule of a partition's placement chain.
type PlacementRule struct {
	Name   string
	Create bool           `yaml:",omitempty" json:",omitempty"`
	Filter Filter         `yaml:",omitempty" json:",omitempty"`
	Parent *PlacementRule `yaml:",omitempty" json:",omitempty"`
	Value  string         `yaml:",omitempty" json:",omitempty"`
}

// Filter limits a placement rule to some users and groups.
type Filter struct {
	Type   string
	Users  []string `yaml:",omitempty" json:",omitempty"`
	Groups []string `yaml:",omitempty" json:",omitempty"`
}

// Limits is a list of limits under one key.
type Limits struct {
	Limit []Limit
}

// Limit caps the resources and applications of users and groups at a
// queue or partition.
type Limit struct {
	Limit           string
	Users           []string          `yaml:",omitempty" json:",omitempty"`
	Groups          []string          `yaml:",omitempty" json:",omitempty"`
	MaxResources    map[string]string `yaml:",omitempty" json:",omitempty"`
	MaxApplications uint64            `yaml:",omitempty" json:",omitempty"`
}

// NodeSortingPolicy is how a partition orders its nodes.
type NodeSortingPolicy struct {
	Type            string
	ResourceWeights map[string]float64 `yaml:",omitempty" json:",omitempty"`
}

// DefaultSchedulerConfig is the configuration the scheduler starts with
// when it is given none: one partition, the root queue open to all, and
// applications placed by their namespace tag.
var DefaultSchedulerConfig = `
partitions:
  - name: default
    placementrules:
      - name: tag
        value: namespace
        create: true
    queues:
      - name: root
        submitacl: '*'
`

// LoadSchedulerConfigFromByteArray reads a configuration (see
// ParseAndValidateConfig) and sets its checksum as the scheduler computes
// it.
func LoadSchedulerConfigFromByteArray(content []byte) (*SchedulerConfig, error) {
	conf, err := ParseAndValidateConfig(content)
	if err != nil {
		return nil, err
	}
	SetChecksum(content, conf)
	return conf, nil
}

// SetChecksum sets conf's checksum: the upper-case hex SHA-256 of content
// without a checksum line.
func SetChecksum(content []byte, conf *SchedulerConfig) {
	sum := sha256.Sum256([]byte(GetConfigurationString(content)))
	conf.Checksum = fmt.Sprintf("%X", sum)
}

// GetConfigurationString is content without the "checksum: <64 hex>"
// entry a configuration read from the scheduler carries.
func GetConfigurationString(content []byte) string {
	text := string(content)
	const key = "checksum: "
	at := strings.Index(text, key)
	if at < 0 {
		return text
	}
	entry := key + strings.SplitN(text[at+len(key):], "\n", 2)[0]
	if len(entry) > len(key)+64 {
		entry = entry[:len(key)+64]
	}
	return strings.ReplaceAll(text, entry, "")
}

// ParseAndValidateConfig reads content strictly (an unknown key is an
// error) and checks what every configuration needs: partitions with
// unique names, each with one queue tree under a queue named root. Empty
// content is the empty configuration, refused for having no partition.
func ParseAndValidateConfig(content []byte) (*SchedulerConfig, error) {
	conf := &SchedulerConfig{}
	dec := yaml.NewDecoder(bytes.NewReader(content))
	dec.KnownFields(true)
	if err := dec.Decode(conf); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if err := Validate(conf); err != nil {
		return nil, err
	}
	return conf, nil
}

// Validate checks the rules named at ParseAndValidateConfig and fills in
// the partition name "default" where none is given.
func Validate(conf *SchedulerConfig) error {
	if conf == nil || len(conf.Partitions) == 0 {
		return errors.New("scheduler config has no partitions")
	}
	seen := map[string]bool{}
	for i := range conf.Partitions {
		p := &conf.Partitions[i]
		if p.Name == "" {
			p.Name = DefaultPartition
		}
		name := strings.ToLower(p.Name)
		if seen[name] {
			return fmt.Errorf("duplicate partition name found with name %s", p.Name)
		}
		seen[name] = true
		if len(p.Queues) != 1 || !strings.EqualFold(p.Queues[0].Name, RootQueue) {
			return fmt.Errorf("partition %s: the queues must be one tree with the queue %s at its top", p.Name, RootQueue)
		}
	}
	return nil
}

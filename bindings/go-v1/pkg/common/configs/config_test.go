package configs

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// A configuration using every part of the types, as an operator writes it.
const fullYAML = `partitions:
  - name: default
    placementrules:
      - name: tag
        value: namespace
        create: true
        parent:
          name: fixed
          value: root.tenants
      - name: user
        filter:
          type: allow
          users: [alice]
          groups: [devs]
    limits:
      - limit: everyone
        users: ['*']
        maxresources: {memory: 10G}
        maxapplications: 100
    preemption:
      enabled: true
      quotapreemptionenabled: false
    nodesortpolicy:
      type: binpacking
      resourceweights: {memory: 2.0, vcore: 1.0}
    usergroupresolver:
      type: os
    queues:
      - name: root
        submitacl: '*'
        adminacl: admins
        properties: {priority.policy: fence}
        queues:
          - name: tenants
            parent: true
            maxapplications: 20
            childtemplate:
              maxapplications: 5
              properties: {application.sort.policy: fifo}
              resources:
                max: {memory: 1G}
          - name: a
            resources:
              guaranteed: {memory: 500M, vcore: 500m}
              max: {memory: 2G, vcore: '2'}
            limits:
              - limit: alice
                users: [alice]
                maxapplications: 2
`

func TestQueuesYAMLRoundTrips(t *testing.T) {
	conf, err := LoadSchedulerConfigFromByteArray([]byte(fullYAML))
	if err != nil {
		t.Fatal(err)
	}
	if len(conf.Checksum) != 64 || strings.ToUpper(conf.Checksum) != conf.Checksum {
		t.Errorf("checksum %q", conf.Checksum)
	}
	p := conf.Partitions[0]
	a := p.Queues[0].Queues[1]
	if p.NodeSortPolicy.Type != "binpacking" || p.NodeSortPolicy.ResourceWeights["memory"] != 2 ||
		p.PlacementRules[0].Parent.Value != "root.tenants" || p.PlacementRules[1].Filter.Groups[0] != "devs" ||
		*p.Preemption.Enabled != true || *p.Preemption.QuotaPreemptionEnabled != false ||
		p.UserGroupResolver.Type != "os" || p.Limits[0].MaxResources["memory"] != "10G" ||
		a.Resources.Guaranteed["vcore"] != "500m" || a.Limits[0].MaxApplications != 2 ||
		p.Queues[0].Properties[PriorityPolicy] != "fence" ||
		p.Queues[0].Queues[0].ChildTemplate.Resources.Max["memory"] != "1G" {
		t.Errorf("read back:\n%+v", conf)
	}

	// YAML out and in again: the same configuration, and its checksum is
	// of the text without the checksum line.
	out, err := yaml.Marshal(conf)
	if err != nil {
		t.Fatal(err)
	}
	again, err := LoadSchedulerConfigFromByteArray(out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	withoutSum := *again
	withoutSum.Checksum = conf.Checksum
	if !reflect.DeepEqual(&withoutSum, conf) {
		t.Errorf("YAML round trip changed the configuration:\n%s", out)
	}
	if GetConfigurationString(out) == string(out) {
		t.Errorf("the checksum line stayed:\n%s", out)
	}

	// JSON, as GET /ws/v1/config answers with Accept: application/json.
	j, err := json.Marshal(conf)
	if err != nil {
		t.Fatal(err)
	}
	var fromJSON SchedulerConfig
	if err := json.Unmarshal(j, &fromJSON); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&fromJSON, conf) {
		t.Errorf("JSON round trip changed the configuration:\n%s", j)
	}
}

func TestTheDefaultConfigurationLoads(t *testing.T) {
	conf, err := LoadSchedulerConfigFromByteArray([]byte(DefaultSchedulerConfig))
	if err != nil {
		t.Fatal(err)
	}
	p := conf.Partitions[0]
	if p.Name != DefaultPartition || p.Queues[0].Name != RootQueue || p.PlacementRules[0].Name != "tag" {
		t.Errorf("%+v", conf)
	}
}

func TestBadConfigurationsAreRefusedByName(t *testing.T) {
	for text, want := range map[string]string{
		"": "no partitions",
		"partitions:\n  - name: x\n    queues: []\n":                                                                "root",
		"partitions:\n  - name: x\n    queues:\n      - name: root\n    colour: blue\n":                             "colour",
		"partitions:\n  - name: x\n    queues:\n      - name: root\n  - name: X\n    queues:\n      - name: root\n": "duplicate",
	} {
		_, err := LoadSchedulerConfigFromByteArray([]byte(text))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error naming %q", text, err, want)
		}
	}
}

// Command gen writes the golden SI v1.8 messages of tests/v1_golden.rs:
// representative requests encoded by golang/protobuf with the generated
// types of the SI Go module v1.8.0, one file per message. Run from this
// directory: go run . ../ (the files are checked in; rerun only when the
// messages change).
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/apache/yunikorn-scheduler-interface/lib/go/si"
	"google.golang.org/protobuf/proto"
)

func res(memory, vcore int64) *si.Resource {
	return &si.Resource{Resources: map[string]*si.Quantity{
		"memory": {Value: memory},
		"vcore":  {Value: vcore},
	}}
}

func messages() map[string]proto.Message {
	return map[string]proto.Message{
		"register": &si.RegisterResourceManagerRequest{
			RmID:        "golden-rm",
			Version:     "v1.8.0",
			PolicyGroup: "queues",
			BuildInfo:   map[string]string{"buildVersion": "1.8.0", "isPluginVersion": "false"},
			Config:      "partitions:\n  - name: default\n    placementrules:\n      - name: provided\n        create: true\n    queues:\n      - name: root\n        submitacl: '*'\n",
			ExtraConfig: map[string]string{"log.level": "-1", "event.trackingEnabled": "false"},
		},
		"nodes": &si.NodeRequest{
			RmID: "golden-rm",
			Nodes: []*si.NodeInfo{
				{
					NodeID:              "node-1",
					Action:              si.NodeInfo_CREATE_DRAIN,
					Attributes:          map[string]string{"si.io/hostname": "node-1", "si.io/rackname": "/rack-1"},
					SchedulableResource: res(8000, 8),
				},
				{NodeID: "node-2", Action: si.NodeInfo_DRAIN_TO_SCHEDULABLE},
			},
		},
		"applications": &si.ApplicationRequest{
			RmID: "golden-rm",
			New: []*si.AddApplicationRequest{{
				ApplicationID:                "app-1",
				QueueName:                    "root.golden",
				PartitionName:                "default",
				Ugi:                          &si.UserGroupInformation{User: "alice", Groups: []string{"dev", "ops"}},
				Tags:                         map[string]string{"namespace": "golden"},
				ExecutionTimeoutMilliSeconds: 60000,
				PlaceholderAsk:               res(100, 1),
				GangSchedulingStyle:          "Hard",
			}},
			Remove: []*si.RemoveApplicationRequest{{ApplicationID: "app-0", PartitionName: "default"}},
		},
		"allocations": &si.AllocationRequest{
			RmID: "golden-rm",
			Allocations: []*si.Allocation{
				{
					AllocationKey:    "pod-pending",
					AllocationTags:   map[string]string{"kubernetes.io/meta/namespace": "golden", "creationTime": "1700000000"},
					ResourcePerAlloc: res(500, 1),
					Priority:         -100,
					ApplicationID:    "app-1",
					Originator:       true,
					PreemptionPolicy: &si.PreemptionPolicy{AllowPreemptSelf: true, AllowPreemptOther: false},
				},
				{
					AllocationKey:    "pod-placed",
					ResourcePerAlloc: res(250, 1),
					Priority:         1000,
					NodeID:           "node-1",
					ApplicationID:    "app-1",
				},
				{
					AllocationKey:    "pod-foreign",
					AllocationTags:   map[string]string{"foreign": "static"},
					ResourcePerAlloc: res(100, 0),
					NodeID:           "node-1",
				},
				{
					AllocationKey:    "tg-ph-0",
					ResourcePerAlloc: res(100, 1),
					ApplicationID:    "app-1",
					TaskGroupName:    "tg",
					Placeholder:      true,
				},
			},
			Releases: &si.AllocationReleasesRequest{AllocationsToRelease: []*si.AllocationRelease{{
				PartitionName:   "default",
				ApplicationID:   "app-1",
				TerminationType: si.TerminationType_STOPPED_BY_RM,
				Message:         "pod deleted",
				AllocationKey:   "pod-old",
			}}},
		},
		"update_configuration": &si.UpdateConfigurationRequest{
			RmID:        "golden-rm",
			PolicyGroup: "queues",
			Config:      "partitions:\n  - name: default\n",
			ExtraConfig: map[string]string{"log.level": "info"},
		},
	}
}

func main() {
	dir := "."
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	for name, m := range messages() {
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
		if err != nil {
			fmt.Fprintln(os.Stderr, name, err)
			os.Exit(1)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".bin"), b, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}

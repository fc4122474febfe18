module github.com/apache/yunikorn-core

go 1.24.0

require (
	github.com/apache/yunikorn-scheduler-interface v1.8.0-0
	github.com/sasha-s/go-deadlock v0.3.6
	go.uber.org/zap v1.27.0
	go.yaml.in/yaml/v3 v3.0.4
	google.golang.org/protobuf v1.36.5
)

require (
	github.com/petermattis/goid v0.0.0-20250813065127-a731cc31b4fe // indirect
	go.uber.org/multierr v1.10.0 // indirect
	golang.org/x/net v0.32.0 // indirect
	golang.org/x/sys v0.39.0 // indirect
	golang.org/x/text v0.32.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20241202173237-19429a94021a // indirect
	google.golang.org/grpc v1.70.0 // indirect
)

module github.com/sicore/sicore/bindings/go

go 1.21

require (
	github.com/apache/incubator-yunikorn-scheduler-interface v0.12.2
	github.com/golang/protobuf v1.2.0
	google.golang.org/protobuf v1.26.0-rc.1
)

require (
	golang.org/x/net v0.0.0-20190311183353-d8887717615a // indirect
	golang.org/x/sys v0.0.0-20190215142949-d0b11bdaac8a // indirect
	golang.org/x/text v0.3.0 // indirect
	google.golang.org/genproto v0.0.0-20180817151627-c66870c02cf8 // indirect
	google.golang.org/grpc v1.23.1 // indirect
)

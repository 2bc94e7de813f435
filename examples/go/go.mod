module idp-mockserver/examples/go

go 1.19

require idp-mockserver/clients/go v0.0.0

replace idp-mockserver/clients/go => ../../clients/go

module idp-mockserver/clients/go

go 1.19

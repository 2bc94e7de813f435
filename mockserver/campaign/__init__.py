"""Fault campaigns: a client team's own test command run again and again against fresh mocks, one fault injected
each time, to find the failures the client's code does not survive (`mockserver campaign`; docs/guide/campaigns.md)."""

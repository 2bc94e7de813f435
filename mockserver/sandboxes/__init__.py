"""Many worlds in one server: sandboxes, snapshots, the options a sandbox starts from, their upkeep, and the state
file that keeps them across restarts."""

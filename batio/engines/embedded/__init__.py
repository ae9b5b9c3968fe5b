"""The embedded Batsim-4-compatible engine on SimGrid."""

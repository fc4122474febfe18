//! Users, groups and ACLs.

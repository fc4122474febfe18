//! TEMPORARY STUB — replaced by the full implementation from branch config-work.
#![allow(missing_docs)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserGroup { pub user: String, pub groups: Vec<String> }
pub fn resolve_user(user: &str, groups: &[String]) -> Result<UserGroup, String> {
    if user.is_empty() { return Err("empty user cannot resolve".into()); }
    Ok(UserGroup { user: user.into(), groups: if groups.is_empty() { vec![user.into()] } else { groups.to_vec() } })
}
#[derive(Debug, Clone, Default)]
pub struct Acl { all: bool, users: Vec<String>, groups: Vec<String> }
impl Acl {
    pub fn parse(text: &str) -> Result<Acl, String> {
        if text.trim() == "*" { return Ok(Acl { all: true, ..Default::default() }); }
        let mut parts = text.splitn(2, ' ');
        let users: Vec<String> = parts.next().unwrap_or("").split(',').filter(|s| !s.is_empty()).map(String::from).collect();
        let groups: Vec<String> = parts.next().unwrap_or("").split(',').filter(|s| !s.is_empty()).map(String::from).collect();
        Ok(Acl { all: false, users, groups })
    }
    pub fn allows(&self, u: &UserGroup) -> bool { self.all || self.users.contains(&u.user) || u.groups.iter().any(|g| self.groups.contains(g)) }
    pub fn allows_all(&self) -> bool { self.all }
}

//! `GET /ws/v1/clusters` names each partition's RM build, as the web UI's
//! dashboard shows it (`rmBuildInformation[0].buildVersion`, `.buildDate`):
//! what an SI v1 RM sent as `buildInfo` at registration, plus its rmId;
//! a re-registration replaces it.

use crate::common::v1::{v1_options, V1Rm};
use crate::restkit::*;
use sicore::ffi::sicore_status::SICORE_OK;
use sicore::proto::si18::v1 as si18;
use sicore_c_rm::v1 as rmv1;

fn request(build: &[(&str, &str)]) -> si18::RegisterResourceManagerRequest {
    si18::RegisterResourceManagerRequest {
        rm_id: "mycluster".into(),
        version: "1.9.0".into(),
        policy_group: "queues".into(),
        build_info: build
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ..Default::default()
    }
}

#[test]
fn clusters_carry_the_build_information_the_rm_registered_with() {
    let mut o = v1_options();
    o.rest_address = "127.0.0.1:0".into();
    let build = [
        ("buildVersion", "1.9.0"),
        ("buildDate", "2026-07-14T10:00:00+0000"),
        ("goVersion", "1.24.4"),
        ("arch", "amd64"),
        ("shimSHA", "abc123"),
    ];
    let rm = V1Rm::registered(o, &request(&build), false, |_| {});
    let addr = rest_address(rm.sched);
    let c = get_json(&addr, "/ws/v1/clusters");
    let info = &c[0]["rmBuildInformation"];
    assert_eq!(info.as_array().map(Vec::len), Some(1), "{c}");
    assert_eq!(info[0]["rmId"], "mycluster", "{info}");
    for (k, v) in build {
        assert_eq!(info[0][k], v, "{k}: {info}");
    }
    assert_eq!(
        info[0].as_object().unwrap().len(),
        build.len() + 1,
        "{info}"
    );

    // Registering again with other information replaces it.
    let table = rmv1::table(&rm.rec, false);
    let (st, msg) = rmv1::register(rm.sched, &request(&[("buildVersion", "1.9.1")]), &table);
    assert_eq!(st, SICORE_OK, "{msg}");
    // (REST answers from a copy of the state up to 200 ms old.)
    let info = poll("the new build information", || {
        let c = get_json(&addr, "/ws/v1/clusters");
        let info = c[0]["rmBuildInformation"][0].clone();
        (info["buildVersion"] == "1.9.1").then_some(info)
    });
    assert!(info.get("buildDate").is_none(), "{info}");
}

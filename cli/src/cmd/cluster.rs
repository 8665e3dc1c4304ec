//! `rmq cluster`: the clusters, their brokers and addresses.

use clap::Args;
use serde_json::json;

use crate::admin::Admin;
use crate::cmd::Outcome;
use crate::error::Result;
use crate::output::{Out, Table};
use crate::settings::ConnectArgs;

/// Show the clusters and their brokers (id 0 = master), with each broker's version.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  rmq cluster\n  rmq cluster --json\n  rmq --profile prod cluster"
)]
pub(crate) struct ClusterArgs {
    /// One JSON object
    #[arg(long)]
    json: bool,
}

/// `V5_5_0` → `5.5.0`.
fn version(desc: &str) -> String {
    desc.strip_prefix('V').unwrap_or(desc).replace('_', ".")
}

pub(crate) async fn run(connect: &ConnectArgs, args: ClusterArgs) -> Result<Outcome> {
    let admin = Admin::connect(connect)?;
    let result = show(&admin, args.json).await;
    admin.release().await;
    result.map(|()| Outcome::Done)
}

async fn show(admin: &Admin, json: bool) -> Result<()> {
    let info = admin.instance().get_broker_cluster_info().await?;
    let mut table = Table::new(&["CLUSTER", "BROKER", "ID", "ADDR", "VERSION", "PUT_TPS"]);
    let mut rows = Vec::new();
    for (cluster, names) in &info.cluster_addr_table {
        let mut names = names.clone();
        names.sort();
        for name in names {
            let Some(data) = info.broker_addr_table.get(&name) else {
                continue;
            };
            for (id, addr) in &data.broker_addrs {
                let (ver, tps) = match admin.instance().get_broker_runtime_info(addr).await {
                    Ok(kv) => (
                        kv.table.get("brokerVersionDesc").map(|v| version(v)),
                        kv.table
                            .get("putTps")
                            .and_then(|t| t.split_whitespace().next().map(str::to_owned)),
                    ),
                    Err(_) => (None, None),
                };
                table.row(vec![
                    cluster.clone(),
                    name.clone(),
                    id.to_string(),
                    addr.clone(),
                    ver.clone().unwrap_or_else(|| "unreachable".to_owned()),
                    tps.clone().unwrap_or_else(|| "-".to_owned()),
                ]);
                rows.push(json!({
                    "cluster": cluster, "broker": name, "id": id, "addr": addr,
                    "version": ver, "put_tps": tps,
                }));
            }
        }
    }
    let mut out = Out::new();
    if json {
        out.line(&json!({ "brokers": rows }).to_string())?;
    } else {
        table.print(&mut out)?;
    }
    out.flush()
}

#[cfg(test)]
mod tests {
    #[test]
    fn versions() {
        assert_eq!(super::version("V5_5_0"), "5.5.0");
        assert_eq!(super::version("V4_9_7"), "4.9.7");
    }
}

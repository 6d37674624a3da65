//! Test engine `memory-bomb`: `GET /api/v1/explode` allocates and touches 1 MiB blocks, keeping
//! them all alive, until the host's memory cap makes the allocation fail (a trap);
//! `GET /api/v1/ok` → 200 `{"data": "ok"}`.

use std::hint::black_box;

use tessera_sdk::{Context, Descriptor, Engine, HandlerResult, Request, Response, Router};

/// The size of each block.
const BLOCK: usize = 1024 * 1024;

struct MemoryBomb;

impl Engine for MemoryBomb {
    fn describe() -> Descriptor {
        Descriptor::new("memory-bomb", "Memory Bomb", env!("CARGO_PKG_VERSION"))
    }

    fn handle(ctx: &Context, request: Request) -> Response {
        Router::new()
            .get("/api/v1/explode", explode)
            .get("/api/v1/ok", |_, _| Ok(Response::ok(&"ok")))
            .handle(ctx, request)
    }
}

fn explode(_ctx: &Context, _request: &Request) -> HandlerResult {
    let mut hoard: Vec<Vec<u8>> = Vec::new();
    loop {
        let mut block = vec![0_u8; BLOCK];
        // Touch every page so the memory is really used.
        for (page, byte) in block.iter_mut().step_by(4096).enumerate() {
            *byte = page as u8 | 1;
        }
        hoard.push(black_box(block));
        black_box(&hoard);
    }
}

tessera_sdk::export_engine!(MemoryBomb);

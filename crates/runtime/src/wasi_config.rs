//! `wasi:config/store@0.2.0-rc.1` for `wasi:http` component engines: the settings the
//! component's manifest declares, with the operator's values (`TESSERA_ENGINES__<CODE>__<NAME>`)
//! or their defaults, exactly what the engine world's `settings.get` answers a native engine
//! for its own settings. A setting without a value is absent; nothing else is readable.

use crate::bindings::wasi_standard::wasi::config::store;
use crate::imports::StoreState;

impl store::Host for StoreState {
    async fn get(&mut self, key: String) -> wasmtime::Result<Result<Option<String>, store::Error>> {
        Ok(Ok(self.scope.settings.get(&key).map(str::to_owned)))
    }

    async fn get_all(&mut self) -> wasmtime::Result<Result<Vec<(String, String)>, store::Error>> {
        Ok(Ok(self
            .scope
            .settings
            .values()
            .map(|(name, value)| (name.to_owned(), value.to_owned()))
            .collect()))
    }
}

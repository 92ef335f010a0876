"""The notebook API (`load`, `show`, `watch`, `load_transfer`) and exported notebooks' signatures."""

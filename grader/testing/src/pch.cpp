// Builds the precompiled header shared by the module tests.

// SPDX-License-Identifier: MIT
#pragma once

// A test program's allocation failures. replaced_new.cpp replaces every replaceable form of operator
// new and delete for the whole program (link it into a program of its own): each allocation asks this
// function first and throws std::bad_alloc (the nothrow forms return null) where it returns true. The
// program defines it.
bool cuctx_test_fail_allocation() noexcept;

#pragma once
inline int seeds() { return 1; }

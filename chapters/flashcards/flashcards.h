// The program's logic, split by subject into the headers below; main.cpp and the tests still
// include this one for now.
#pragma once
#include "chapters/flashcards/deck.h"
#include "chapters/flashcards/progress.h"
#include "chapters/flashcards/schedule.h"
#include "chapters/flashcards/screen.h"
#include "chapters/flashcards/session.h"
